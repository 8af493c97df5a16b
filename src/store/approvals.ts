import type { Redis } from 'ioredis';
import { createApprovalDigest, type ReviewedRow } from '../domain/approval-digest.ts';
import { formatUsdc } from '../domain/money.ts';
import type { Batch } from './batch-record.ts';
import { keys } from './keys.ts';
import { luaScriptFile, runScript } from './lua-script.ts';
import { queuedTransfers } from './queued-transfers.ts';
import { LuaReplyError, replyArray, replyInt, replyString } from './lua-reply.ts';

/*
 * Four eyes (docs/access.md "Four eyes"): the approvals of a held batch, each bound to the digest of the
 * rows it reviewed, and the release once enough distinct names, none the submitter's, approved the
 * rows as they are now.
 *
 * The batch record's `queued_rev` counts the changes to its set of `queued` transfers (the
 * transition script moves it), so "the rows as they are now" is one field: a digest computed
 * between two equal readings of it is the digest of that set, and the release checks it again in
 * the same script that releases.
 */

/** An approval of the current hold: who, when (ISO), and the digest it was given for. */
export type Approval = { readonly name: string; readonly at: string; readonly digest: string };

/** What an approver reviews: the rows a release would pay, their total and digest, at a revision. */
export type Review = {
  readonly digest: string;
  /** `queued_rev` when it was read ('' for a batch none of whose transfers moved yet). */
  readonly rev: string;
  readonly rows: number;
  /** micro-USDC */
  readonly amount: bigint;
};

const REVIEW_FIELDS = ['from', 'to', 'amount', 'recipient'];
/** Tries to read a consistent review while workers or operators move rows. */
const REVIEW_TRIES = 5;

/** A reviewed row and its amount in micro-USDC. */
type CountedRow = { readonly row: ReviewedRow; readonly micro: bigint };

/**
 * The batch's queued rows in line order, a page at a time, as the status document shows them (the
 * digest's lines; what `approve` prints).
 */
async function* reviewedRows(redis: Redis, prefix: string, batchId: string): AsyncGenerator<CountedRow[]> {
  for await (const page of queuedTransfers(redis, prefix, batchId, REVIEW_FIELDS)) {
    yield page.flatMap(({ id, values }) => {
      const [from, to, amount, recipient] = values;
      if (!from || !to || !amount || !recipient || !/^[0-9]+$/.test(amount)) return [];
      const micro = BigInt(amount);
      return [{ row: { id, from, to, amount: formatUsdc(micro), recipient }, micro }];
    });
  }
}

/**
 * The review of the batch's queued rows now: read between two equal readings of `queued_rev`
 * (tried again while rows move); `onRows` sees every row, for a caller that shows them.
 */
export async function readReview(
  redis: Redis,
  prefix: string,
  batchId: string,
  onRows?: (rows: readonly ReviewedRow[]) => void,
): Promise<Review> {
  const k = keys(prefix);
  for (let attempt = 1; ; attempt++) {
    const rev = (await redis.hget(k.batch(batchId), 'queued_rev')) ?? '';
    const digest = createApprovalDigest();
    const seen: ReviewedRow[][] = [];
    let rows = 0;
    let amount = 0n;
    for await (const page of reviewedRows(redis, prefix, batchId)) {
      const shown = page.map((r) => r.row);
      digest.add(shown);
      rows += page.length;
      for (const r of page) amount += r.micro;
      if (onRows) seen.push(shown);
    }
    const after = (await redis.hget(k.batch(batchId), 'queued_rev')) ?? '';
    if (after === rev || attempt >= REVIEW_TRIES) {
      for (const page of seen) onRows?.(page);
      return { digest: digest.hex(), rev, rows, amount };
    }
  }
}

/**
 * The held batch's `approval_digest` for the status document, kept in the batch record with the
 * revision it was read at (`approval_digest`, `approval_digest_rev`): read again only once the
 * queued rows changed, so a page of a 100,000-row held batch that reloads itself does not read them
 * all each time.
 */
export async function approvalDigestOf(
  redis: Redis,
  prefix: string,
  batchId: string,
  batch: Pick<Batch, 'queuedRev' | 'approvalDigest'>,
): Promise<string> {
  const kept = batch.approvalDigest;
  if (kept && kept.rev === batch.queuedRev) return kept.digest;
  const review = await readReview(redis, prefix, batchId);
  await redis.hset(
    keys(prefix).batch(batchId),
    'approval_digest',
    review.digest,
    'approval_digest_rev',
    review.rev,
  );
  return review.digest;
}

/** The approvals of the batch's current hold, oldest first. */
export async function readApprovals(redis: Redis, prefix: string, batchId: string): Promise<Approval[]> {
  return approvalsOf(await redis.hgetall(keys(prefix).batchApprovals(batchId)));
}

/** The approvals hash's entries (`name` → `<at ms>|<digest>`), oldest first. */
export function approvalsOf(raw: Readonly<Record<string, string>>): Approval[] {
  return Object.entries(raw)
    .map(([name, value]) => {
      const bar = value.indexOf('|');
      return { name, ms: Number(value.slice(0, bar)), digest: value.slice(bar + 1) };
    })
    .sort((a, b) => a.ms - b.ms || (a.name < b.name ? -1 : 1))
    .map(({ name, ms, digest }) => ({ name, at: new Date(ms).toISOString(), digest }));
}

/** Records an approval and releases the batch when it is the last one needed (scripts/batch-approve.lua). */
const APPROVE = luaScriptFile('batch-approve.lua');

export type ApprovalRecord = {
  readonly status: 'not_held' | 'changed' | 'pending' | 'released';
  readonly count: number;
  readonly required: number;
};

export async function recordApproval(
  redis: Redis,
  prefix: string,
  batchId: string,
  approval: { rev: string; name: string; at: number; digest: string; required: number },
): Promise<ApprovalRecord> {
  const k = keys(prefix);
  const [status, count, required] = replyArray(
    'batch-approve.lua',
    await runScript(
      redis,
      APPROVE,
      [k.batch(batchId), k.batchApprovals(batchId)],
      [approval.rev, approval.name, approval.at, approval.digest, approval.required],
    ),
  );
  return {
    status: approvalStatusOf(replyString('batch-approve.lua', status)),
    count: replyInt('batch-approve.lua', count),
    required: replyInt('batch-approve.lua', required),
  };
}

const APPROVAL_STATUSES = ['not_held', 'changed', 'pending', 'released'] as const;

function approvalStatusOf(text: string): ApprovalRecord['status'] {
  const status = APPROVAL_STATUSES.find((s) => s === text);
  if (status === undefined)
    throw new LuaReplyError('USDC_LUA_REPLY', `batch-approve.lua: unknown status ${text}`);
  return status;
}
