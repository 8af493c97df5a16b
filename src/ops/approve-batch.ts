import type { Chain } from '../domain/chains.ts';
import { ConflictError } from '../domain/errors.ts';
import { bookAddressOf, type BookAddress } from '../domain/recipient-key.ts';
import { readReview, recordApproval, readApprovals, type Approval } from '../store/approvals.ts';
import { recordAudit } from '../store/audit.ts';
import { addJobsForQueuedTransfers } from '../ingest/queued-jobs.ts';
import { queuedTransfers } from '../store/queued-transfers.ts';
import { createRecipientBook } from '../store/recipient-book.ts';
import type { Screen } from '../ingest/row-validator.ts';
import { requireBatch, type OpsDeps } from './ops-deps.ts';
import { FourEyesError, StaleDigestError } from './ops-error.ts';

/** What an approval did (docs/access.md "Four eyes"). */
export type ApproveOutcome = {
  /** Transfers given their jobs by this approval (0 until the last approval needed). */
  readonly released: number;
  /** The batch was not held: nothing to approve (nothing recorded). */
  readonly already: boolean;
  /** Still held after this approval: more approvals are needed. */
  readonly held: boolean;
  /** Approvals of the digest approved, distinct names, the submitter's never among them. */
  readonly approvals: number;
  readonly required: number;
  readonly digest: string | null;
  readonly recipientsAdded: number;
};

/** How many times the approval is tried while the batch's queued rows move under it. */
const APPROVE_TRIES = 5;

/**
 * Approves a held batch as `deps.actor`, for the rows whose approval digest is `digest` (what the
 * approver reviewed). Refused when the actor submitted the batch (FourEyesError) or the digest is
 * not the batch's now (StaleDigestError, naming the current one). The approval counts toward
 * `APPROVALS_REQUIRED` distinct names; the last one needed releases the batch: its queued
 * transfers — exactly the reviewed ones, checked in the same script that releases — get their jobs.
 */
/**
 * What an approval needs besides the operator's: the approvals a hold needs here, and the sanctions
 * lists in force (a listed address is not vouched into the address book; docs/screening.md).
 */
export type ApproveDeps = OpsDeps & {
  readonly approvalsRequired: number;
  readonly screen?: Screen | undefined;
};

export async function approveBatch(
  deps: ApproveDeps,
  batchId: string,
  digest: string,
): Promise<ApproveOutcome> {
  try {
    return await approveOnce(deps, batchId, digest);
  } catch (err) {
    if (err instanceof FourEyesError || err instanceof StaleDigestError) {
      await auditRefusal(deps, batchId, digest, err);
    }
    throw err;
  }
}

/**
 * A refused approval is audited (docs/audit.md): the submitter trying to approve their own batch,
 * or an approval naming rows that are not the batch's now. It changed nothing, but it is what a
 * reviewer of the trail looks for.
 */
export async function auditRefusal(
  deps: OpsDeps,
  batchId: string,
  digest: string | undefined,
  err: FourEyesError | StaleDigestError,
): Promise<void> {
  await recordAudit(deps, {
    who: deps.actor,
    action: 'approve_refused',
    batch: batchId,
    detail: {
      reason: err instanceof FourEyesError ? 'four_eyes' : 'stale_digest',
      digest: digest?.toLowerCase() ?? null,
      ...(err instanceof StaleDigestError ? { current_digest: err.currentDigest } : {}),
    },
  });
}

async function approveOnce(deps: ApproveDeps, batchId: string, digest: string): Promise<ApproveOutcome> {
  const batch = await requireBatch(deps, batchId);
  const jobDeps = { redis: deps.redis, prefix: deps.prefix, jobs: deps.jobs };
  const reviewed = digest.toLowerCase();
  if (!batch.held) return await notHeld(deps, batchId, jobDeps);
  if (!batch.enqueued) {
    throw new ConflictError(
      'USDC_BATCH_BEING_WRITTEN',
      `batch ${batchId} is still being enqueued: approve it once all its rows are in`,
    );
  }
  if (batch.submittedBy !== null && batch.submittedBy === deps.actor) {
    throw new FourEyesError(batchId, deps.actor);
  }
  for (let attempt = 1; ; attempt++) {
    const review = await readReview(deps.redis, deps.prefix, batchId);
    if (review.digest !== reviewed) throw new StaleDigestError(batchId, reviewed, review.digest);
    const before = await readApprovals(deps.redis, deps.prefix, batchId);
    if (before.some((a) => a.name === deps.actor && a.digest === reviewed)) {
      return { ...(await pendingOf(deps, batchId, reviewed, before)), recipientsAdded: 0 };
    }
    // Before the release, when this approval is the last one needed: an approve interrupted after
    // it is run again, and the adds are idempotent.
    const counted = countFor(before, reviewed, batch.submittedBy) + 1;
    const required = Math.max(batch.approvalsRequired, deps.approvalsRequired);
    const recipientsAdded = counted >= required ? await vouchForRecipients(deps, batchId) : 0;
    const now = (deps.now ?? Date.now)();
    const res = await recordApproval(deps.redis, deps.prefix, batchId, {
      rev: review.rev,
      name: deps.actor,
      at: now,
      digest: reviewed,
      required: deps.approvalsRequired,
    });
    if (res.status === 'not_held') return await notHeld(deps, batchId, jobDeps);
    if (res.status === 'changed') {
      if (attempt < APPROVE_TRIES) continue;
      const now2 = await readReview(deps.redis, deps.prefix, batchId);
      throw new StaleDigestError(batchId, reviewed, now2.digest);
    }
    const released = res.status === 'released' ? await addJobsForQueuedTransfers(jobDeps, batchId) : 0;
    await recordAudit(deps, {
      who: deps.actor,
      action: 'approve',
      batch: batchId,
      detail: {
        digest: reviewed,
        approvals: res.count,
        required: res.required,
        released,
        ...(res.status === 'released' ? { recipients_added: recipientsAdded } : {}),
      },
    });
    return {
      released,
      already: false,
      held: res.status !== 'released',
      approvals: res.count,
      required: res.required,
      digest: reviewed,
      recipientsAdded: res.status === 'released' ? recipientsAdded : 0,
    };
  }
}

/**
 * Nothing to approve. An approve interrupted after it released the hold left transfers without
 * their jobs: they get them now (a job that exists is not added twice). Changes nothing else, so it
 * is not audited.
 */
async function notHeld(
  deps: OpsDeps,
  batchId: string,
  jobDeps: Parameters<typeof addJobsForQueuedTransfers>[0],
): Promise<ApproveOutcome> {
  await addJobsForQueuedTransfers(jobDeps, batchId);
  const b = await requireBatch(deps, batchId);
  return {
    released: 0,
    already: true,
    held: false,
    approvals: 0,
    required: b.approvalsRequired,
    digest: null,
    recipientsAdded: 0,
  };
}

/** The actor already approved this digest: nothing changes (and nothing is audited). */
async function pendingOf(
  deps: ApproveDeps,
  batchId: string,
  digest: string,
  approvals: readonly Approval[],
): Promise<Omit<ApproveOutcome, 'recipientsAdded'>> {
  const b = await requireBatch(deps, batchId);
  return {
    released: 0,
    already: false,
    held: true,
    approvals: countFor(approvals, digest, b.submittedBy),
    required: Math.max(b.approvalsRequired, deps.approvalsRequired),
    digest,
  };
}

/** Approvals of `digest` by names other than the submitter's. */
function countFor(approvals: readonly Approval[], digest: string, submittedBy: string | null): number {
  return approvals.filter((a) => a.digest === digest && a.name !== submittedBy).length;
}

/**
 * Approving a batch vouches for the new recipients it releases: the addresses of its `queued` rows
 * flagged `new_recipient` are added to the address book (`via approve:<batch>`), so the next payroll
 * to them runs without a hold. Not an address removed from the book (removal is how ops answer a
 * reported fraud: only an explicit add brings it back), and not a row cancelled before the approval.
 */
async function vouchForRecipients(deps: ApproveDeps, batchId: string): Promise<number> {
  const addresses: BookAddress[] = [];
  const fields = ['new_recipient', 'to', 'recipient'];
  for await (const page of queuedTransfers(deps.redis, deps.prefix, batchId, fields)) {
    for (const { values } of page) {
      const [flag, to, recipient] = values;
      if (flag !== '1' || !to || !recipient) continue;
      const address = bookAddressOf({ to: to as Chain, recipient });
      // A list grown since the enqueue: a listed address never enters the book (its transfer is
      // rejected before signing, docs/screening.md).
      if (!deps.screen?.(address.address)) addresses.push(address);
    }
  }
  if (addresses.length === 0) return 0;
  const book = createRecipientBook({
    redis: deps.redis,
    prefix: deps.prefix,
    ...(deps.now ? { now: deps.now } : {}),
  });
  return await book.addUnlessRemoved(addresses, deps.actor, `approve:${batchId}`);
}
