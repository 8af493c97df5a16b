import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Chain } from '../domain/chains.ts';
import { UsdcBatchError, ValidationError } from '../domain/errors.ts';
import { bookAddressOf, type BookAddress } from '../domain/recipient-key.ts';
import { decideHolds, screenRecipients, type HoldConfig } from '../ingest/hold-rules.ts';
import type { TransferJobSink, TransferJobSpec } from '../store/batch-writer.ts';
import { addJobsForQueuedTransfers } from '../store/batch-writer.ts';
import { recordAudit } from '../store/audit.ts';
import { holdBatch } from '../store/batch-hold.ts';
import { keys } from '../store/keys.ts';
import { releaseOwnerReservation } from '../store/owner-balance.ts';
import { queuedTransfers } from '../store/queued-transfers.ts';
import { RETRY_CLEARED_FIELDS, savedSteps, type TransferPatch } from '../store/saved-steps.ts';
import { createRecipientBook } from '../store/recipient-book.ts';
import type { TransferRecord } from '../store/transfer-record.ts';
import { createTransferStore } from '../store/transfer-store.ts';

/**
 * Operator actions shared by the CLI and the HTTP API. Each one is recorded in the audit stream
 * with its actor.
 */
export type OpsDeps = {
  readonly redis: Redis;
  readonly prefix: string;
  readonly jobs: TransferJobSink;
  /** Who acts: `cli:<user>` or `http:<token name>`. */
  readonly actor: string;
  readonly now?: () => number;
};

/** Where an intent an operator recorded is handed to be followed (the producer implements it). */
export type IntentFollowSink = {
  followIntent(batchId: string, transferId: string, intentId: string): Promise<void>;
};

export class NotFoundError extends UsdcBatchError {
  override name = 'NotFoundError';
}

/** A cancelled row's owner balance, if one was reserved for it, goes back. */
async function releaseReservation(deps: OpsDeps, batchId: string, id: string): Promise<void> {
  const rec = await createTransferStore({ redis: deps.redis, prefix: deps.prefix }).load(batchId, id);
  if (rec) await releaseOwnerReservation(deps.redis, deps.prefix, rec);
}

async function requireBatch(deps: OpsDeps, batchId: string): Promise<Record<string, string>> {
  const b = await deps.redis.hgetall(keys(deps.prefix).batch(batchId));
  if (!b['id']) throw new NotFoundError('USDC_BATCH_NOT_FOUND', `batch ${batchId} does not exist`);
  return b;
}

/**
 * Re-queues the batch's `failed` transfers only (never submitted, never needs_review). The batch
 * is re-opened (complete = false) before this returns. The re-queued rows pass the same holds as
 * new ones (PRODUCT.md §5 promise 5: the approval threshold over 24 hours, the address book); a
 * held batch — held before, or by this retry — gets no jobs until approved.
 */
export async function retryBatch(
  deps: OpsDeps & { readonly config: HoldConfig },
  batchId: string,
): Promise<{ requeued: number; heldReason: string | null }> {
  const batch = await requireBatch(deps, batchId);
  const k = keys(deps.prefix);
  const store = createTransferStore({ redis: deps.redis, prefix: deps.prefix });
  const ids = await deps.redis.zrange(k.batchState(batchId, 'failed'), 0, -1);
  const failed: TransferRecord[] = [];
  for (const id of ids) {
    const rec = await store.load(batchId, id);
    if (rec?.state === 'failed') failed.push(rec);
  }
  // Decided before any row is re-queued: a row must never get a job the hold would have denied.
  const heldNow = batch['held'] === '1' ? null : await holdRetried(deps, batchId, failed);
  const held = batch['held'] === '1' || heldNow !== null;
  const byRound = new Map<number, TransferJobSpec[]>();
  let requeued = 0;
  for (const rec of failed) {
    const id = rec.id;
    const round = savedSteps(rec).round + 1;
    const res = await store.transition(batchId, id, {
      expected: ['failed'],
      to: 'queued',
      fields: { round, reestimate: 1 },
      clear: RETRY_CLEARED_FIELDS,
    });
    if (!res.ok) continue;
    requeued++;
    const list = byRound.get(round) ?? [];
    list.push({ transferId: id, from: rec.from, to: rec.to, amount: rec.amount });
    byRound.set(round, list);
  }
  if (!held) {
    for (const [round, transfers] of byRound) await deps.jobs.addTransfers(batchId, transfers, round);
  }
  await recordAudit(deps.redis, deps.prefix, {
    actor: deps.actor,
    action: 'retry',
    batch: batchId,
    detail: { requeued, ...(heldNow ? { held_reason: heldNow } : {}) },
  });
  return {
    requeued,
    heldReason: held ? ((await deps.redis.hget(k.batch(batchId), 'held_reason')) ?? '') : null,
  };
}

/**
 * The holds of new rows, applied to the rows `retry` re-queues (each retry is its own entry in the
 * rolling approval window). Holds the batch and returns the reason, or null when none applies.
 */
async function holdRetried(
  deps: OpsDeps & { readonly config: HoldConfig },
  batchId: string,
  rows: readonly TransferRecord[],
): Promise<string | null> {
  if (rows.length === 0) return null;
  const now = (deps.now ?? Date.now)();
  // A rebalancing batch pays only the treasury's own addresses: always known recipients.
  const rebalance = (await deps.redis.hget(keys(deps.prefix).batch(batchId), 'source')) === 'rebalance';
  const own = rebalance ? new Set(rows.map((r) => bookAddressOf(r).key)) : undefined;
  const screen = await screenRecipients(deps.redis, deps.prefix, rows, own);
  const decision = await decideHolds(
    { redis: deps.redis, prefix: deps.prefix, config: deps.config, now },
    rows,
    screen,
    { batchId, member: `${batchId}#retry-${now}-${randomUUID().slice(0, 8)}` },
  );
  if (decision.reasons.length === 0) return null;
  const reason = `retry: ${decision.reasons.join('; ')}`;
  await holdBatch(deps.redis, deps.prefix, batchId, reason);
  return reason;
}

/**
 * Settles a `needs_review` transfer after the operator checked the chain. `--not-sent` is refused
 * while the signed permit or transaction could still execute.
 */
export async function resolveTransfer(
  deps: OpsDeps & { readonly intents?: IntentFollowSink },
  batchId: string,
  transferId: string,
  decision: { submitted: string } | { notSent: true },
): Promise<{ state: 'submitted' | 'failed' }> {
  await requireBatch(deps, batchId);
  const now = (deps.now ?? Date.now)();
  const store = createTransferStore({ redis: deps.redis, prefix: deps.prefix });
  const rec = await store.load(batchId, transferId);
  if (!rec)
    throw new NotFoundError('USDC_TRANSFER_NOT_FOUND', `transfer ${transferId} is not in batch ${batchId}`);
  if (rec.state !== 'needs_review') {
    throw new ValidationError(
      'USDC_RESOLVE_STATE',
      `transfer ${transferId} is ${rec.state}, not needs_review`,
    );
  }
  let to: 'submitted' | 'failed';
  let fields: TransferPatch;
  if ('submitted' in decision) {
    if (!/^[A-Za-z0-9_.:-]{1,200}$/.test(decision.submitted)) {
      throw new ValidationError('USDC_USAGE_INTENT', 'the intent id has characters an intent id never has');
    }
    to = 'submitted';
    fields = { intent_id: decision.submitted, error_code: '', error_message: '', resolved_by: deps.actor };
  } else {
    const steps = savedSteps(rec);
    const deadline = steps.permitDeadline ? steps.permitDeadline * 1000 : 0;
    const expires = steps.solanaExpiresAt ?? 0;
    const live = Math.max(deadline, Number.isFinite(expires) ? expires : 0);
    const hasUnboundedTx = steps.solanaSigned !== null && steps.solanaExpiresAt === null;
    if (hasUnboundedTx) {
      throw new ValidationError(
        'USDC_RESOLVE_TOO_EARLY',
        'the signed Solana transaction has no known expiry; confirm on chain and resolve with --submitted, or wait for the service status',
      );
    }
    if (live > now) {
      throw new ValidationError(
        'USDC_RESOLVE_TOO_EARLY',
        `its signed ${deadline >= live ? 'permit' : 'transaction'} could still execute until ${new Date(live).toISOString()}; --not-sent is accepted from then on`,
      );
    }
    to = 'failed';
    fields = {
      error_code: 'resolved_not_sent',
      error_message: `an operator found it not sent (${deps.actor})`,
      resolved_by: deps.actor,
    };
  }
  const res = await store.transition(batchId, transferId, { expected: ['needs_review'], to, fields });
  if (!res.ok)
    throw new ValidationError('USDC_RESOLVE_STATE', `transfer ${transferId} changed state meanwhile`);
  if (to === 'failed') await releaseOwnerReservation(deps.redis, deps.prefix, rec);
  // A resolved payment is followed like any submitted one, so that its batch can settle.
  if ('submitted' in decision) await deps.intents?.followIntent(batchId, transferId, decision.submitted);
  await recordAudit(deps.redis, deps.prefix, {
    actor: deps.actor,
    action: 'resolve',
    batch: batchId,
    detail: {
      transfer: transferId,
      to,
      ...('submitted' in decision ? { intent_id: decision.submitted } : {}),
    },
  });
  return { state: to };
}

/**
 * Cancels the batch's transfers that have not been sent: those still `queued` become `failed`
 * (`cancelled`). Transfers in progress are not cut off; a queued transfer holds no live payload.
 * The batch's hold is left as it is.
 */
export async function cancelBatch(deps: OpsDeps, batchId: string): Promise<{ cancelled: number }> {
  await requireBatch(deps, batchId);
  const k = keys(deps.prefix);
  const store = createTransferStore({ redis: deps.redis, prefix: deps.prefix });
  let cancelled = 0;
  for (;;) {
    const ids = await deps.redis.zrange(k.batchState(batchId, 'queued'), 0, 999);
    if (ids.length === 0) break;
    let moved = 0;
    for (const id of ids) {
      const res = await store.transition(batchId, id, {
        expected: ['queued'],
        to: 'failed',
        fields: { error_code: 'cancelled', error_message: `cancelled by ${deps.actor}` },
      });
      if (res.ok) {
        moved++;
        await releaseReservation(deps, batchId, id);
      }
    }
    cancelled += moved;
    if (moved === 0) break;
  }
  // A held batch stays held: only `approve` releases a hold (PRODUCT.md §5 promise 5). Setting
  // `held` to 0 here once let `retry` re-queue the cancelled rows with jobs, paying them unapproved.
  await recordAudit(deps.redis, deps.prefix, {
    actor: deps.actor,
    action: 'cancel',
    batch: batchId,
    detail: { cancelled },
  });
  return { cancelled };
}

/**
 * `cancel BATCH --transfer ID…`: cancels single unsent rows (`queued` → `failed`, `cancelled`),
 * typically of a held batch whose other rows are to be approved; the batch's hold is left as it is.
 * Every id must belong to the batch (else nothing is cancelled); a row that is not `queued` any more
 * is not cut off and is reported with its state.
 */
export async function cancelTransfers(
  deps: OpsDeps,
  batchId: string,
  transferIds: readonly string[],
): Promise<{ cancelled: string[]; skipped: { id: string; state: string }[] }> {
  await requireBatch(deps, batchId);
  const store = createTransferStore({ redis: deps.redis, prefix: deps.prefix });
  const unique = [...new Set(transferIds)];
  for (const id of unique) {
    if (!(await store.load(batchId, id))) {
      throw new NotFoundError('USDC_TRANSFER_NOT_FOUND', `transfer ${id} is not in batch ${batchId}`);
    }
  }
  const cancelled: string[] = [];
  const skipped: { id: string; state: string }[] = [];
  for (const id of unique) {
    const res = await store.transition(batchId, id, {
      expected: ['queued'],
      to: 'failed',
      fields: { error_code: 'cancelled', error_message: `cancelled by ${deps.actor}` },
      clear: ['wait_reason'],
    });
    if (res.ok) {
      cancelled.push(id);
      await releaseReservation(deps, batchId, id);
    } else skipped.push({ id, state: res.current ?? 'missing' });
  }
  await recordAudit(deps.redis, deps.prefix, {
    actor: deps.actor,
    action: 'cancel',
    batch: batchId,
    detail: { cancelled, not_cancelled: skipped },
  });
  return { cancelled, skipped };
}

/** Releases a batch held for approval: its queued transfers get their jobs. */
export async function approveBatch(
  deps: OpsDeps,
  batchId: string,
): Promise<{ released: number; already: boolean; recipientsAdded: number }> {
  const batch = await requireBatch(deps, batchId);
  const k = keys(deps.prefix);
  const jobDeps = { redis: deps.redis, prefix: deps.prefix, jobs: deps.jobs };
  if (batch['held'] !== '1') {
    // Nothing to approve. An approve interrupted after it released the hold left transfers without
    // their jobs: they get them now (a job that exists is not added twice).
    await addJobsForQueuedTransfers(jobDeps, batchId);
    return { released: 0, already: true, recipientsAdded: 0 };
  }
  // Before the release: an approve interrupted here is run again, and the adds are idempotent.
  const recipientsAdded = await vouchForRecipients(deps, batchId);
  await deps.redis.hset(
    k.batch(batchId),
    'held',
    '0',
    'held_reason',
    '',
    'approved_at',
    String((deps.now ?? Date.now)()),
    'approved_by',
    deps.actor,
  );
  const released = await addJobsForQueuedTransfers(jobDeps, batchId);
  await recordAudit(deps.redis, deps.prefix, {
    actor: deps.actor,
    action: 'approve',
    batch: batchId,
    detail: { released, recipients_added: recipientsAdded },
  });
  return { released, already: false, recipientsAdded };
}

/**
 * Approving a batch vouches for the new recipients it releases: the addresses of its `queued` rows
 * flagged `new_recipient` are added to the address book (`via approve:<batch>`), so the next payroll
 * to them runs without a hold. Not an address removed from the book (removal is how ops answer a
 * reported fraud: only an explicit add brings it back), and not a row cancelled before the approval.
 */
async function vouchForRecipients(deps: OpsDeps, batchId: string): Promise<number> {
  const addresses: BookAddress[] = [];
  const fields = ['new_recipient', 'to', 'recipient'];
  for await (const page of queuedTransfers(deps.redis, deps.prefix, batchId, fields)) {
    for (const { values } of page) {
      const [flag, to, recipient] = values;
      if (flag === '1' && to && recipient) addresses.push(bookAddressOf({ to: to as Chain, recipient }));
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

export async function setPaused(deps: Omit<OpsDeps, 'jobs'>, paused: boolean): Promise<void> {
  const k = keys(deps.prefix);
  if (paused) await deps.redis.set(k.paused, String((deps.now ?? Date.now)()));
  else await deps.redis.del(k.paused);
  await recordAudit(deps.redis, deps.prefix, { actor: deps.actor, action: paused ? 'pause' : 'resume' });
}
