import type { Redis } from 'ioredis';
import { CONTROL_MARK_FIELDS, controlMarksOf, type ControlMarks } from './batch-control-marks.ts';
import { keys } from './keys.ts';
import { luaScriptFile, runScript } from './lua-script.ts';
import { removedAtOf } from './recipient-book.ts';

/**
 * Holds a batch for approval after it was enqueued (`retry` of rows that meet a hold, a worker that
 * finds a recipient removed from the book); a hold that begins, or a reason that is new, voids the
 * approvals given so far (scripts/batch-hold.lua).
 */
const HOLD = luaScriptFile('batch-hold.lua');

export async function holdBatch(
  redis: Redis,
  prefix: string,
  batchId: string,
  reason: string,
  approvalsRequired?: number,
): Promise<void> {
  const k = keys(prefix);
  const args = approvalsRequired === undefined ? [reason] : [reason, String(approvalsRequired)];
  await runScript(redis, HOLD, [k.batch(batchId), k.batchApprovals(batchId)], args);
}

/** What a worker reads before it lets a transfer make its first payload. */
export type ClearanceFacts = {
  readonly held: boolean;
  /** When the batch was enqueued and last approved (ms; 0 when never approved). */
  readonly createdAt: number;
  readonly approvedAt: number;
  /** When the recipient was removed from the address book; null while it is not removed. */
  readonly removedAt: number | null;
  /**
   * The batch's control marks, read in the same HMGET: the worker's own controls judge the batch
   * from them (src/worker/batch-controls.ts), one round trip less per transfer than a read of their own.
   */
  readonly controlMarks: ControlMarks;
};

/**
 * One round trip: the batch's hold, approval and control marks, then the recipient's tombstone — a
 * pipeline, not a MULTI (two commands less per transfer). Read in that order, the tombstone is at least as new as
 * the approval it is compared with: a removal (or re-add) landing between the two reads is judged
 * as one read just after it would judge it, and an approval or hold landing between them is missed
 * as by one read just before it. Either is an answer a single read could have given.
 */
async function readClearanceFacts(
  redis: Redis,
  prefix: string,
  batchId: string,
  recipientKey: string,
): Promise<ClearanceFacts> {
  const k = keys(prefix);
  const res = (await redis
    .pipeline()
    .hmget(k.batch(batchId), 'held', 'created_at', 'approved_at', ...CONTROL_MARK_FIELDS)
    .hget(k.recipientsRemoved, recipientKey)
    .exec()) as [[Error | null, (string | null)[]], [Error | null, string | null]];
  const [[errBatch, batch], [errTomb, tomb]] = res;
  if (errBatch || errTomb) throw errBatch ?? errTomb;
  const [held, createdAt, approvedAt, ...marks] = batch;
  return {
    held: held === '1',
    createdAt: Number(createdAt ?? 0),
    approvedAt: Number(approvedAt ?? 0),
    removedAt: tomb ? removedAtOf(tomb) : null,
    controlMarks: controlMarksOf(marks),
  };
}

/** What the worker uses to keep a held batch, or a recipient removed from the book, unpaid. */
export type ApprovalGate = {
  facts(batchId: string, recipientKey: string): Promise<ClearanceFacts>;
  hold(batchId: string, reason: string): Promise<void>;
};

export function createApprovalGate(deps: { redis: Redis; prefix: string }): ApprovalGate {
  return {
    facts: (batchId, recipientKey) => readClearanceFacts(deps.redis, deps.prefix, batchId, recipientKey),
    hold: (batchId, reason) => holdBatch(deps.redis, deps.prefix, batchId, reason),
  };
}
