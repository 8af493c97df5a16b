import type { Redis } from 'ioredis';
import { keys } from './keys.ts';
import { luaScript, runScript } from './lua-script.ts';
import { removedAtOf } from './recipient-book.ts';

/**
 * Holds a batch for approval after it was enqueued (`retry` of rows that meet a hold, a worker that
 * finds a recipient removed from the book): `held=1`, and the reason is added to `held_reason`
 * unless it is there already. Only `approve` sets `held` back to 0. A hold that begins, or a reason
 * that is new, voids the approvals given so far (docs/access.md "Four eyes"): they were given for another
 * hold, or before this reason was known.
 * KEYS: 1 batch, 2 its approvals. ARGV: 1 reason. Returns 0 when the batch does not exist.
 */
const HOLD = luaScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local held = redis.call('HGET', KEYS[1], 'held')
local reason = redis.call('HGET', KEYS[1], 'held_reason') or ''
local new = true
if held ~= '1' or reason == '' then
  reason = ARGV[1]
elseif not string.find(reason, ARGV[1], 1, true) then
  reason = reason .. '; ' .. ARGV[1]
else
  new = false
end
redis.call('HSET', KEYS[1], 'held', '1', 'held_reason', reason)
if new then redis.call('DEL', KEYS[2]) end
return 1
`);

export async function holdBatch(
  redis: Redis,
  prefix: string,
  batchId: string,
  reason: string,
): Promise<void> {
  const k = keys(prefix);
  await runScript(redis, HOLD, [k.batch(batchId), k.batchApprovals(batchId)], [reason]);
}

/** What a worker reads before it lets a transfer make its first payload. */
type ClearanceFacts = {
  readonly held: boolean;
  /** When the batch was enqueued and last approved (ms; 0 when never approved). */
  readonly createdAt: number;
  readonly approvedAt: number;
  /** When the recipient was removed from the address book; null while it is not removed. */
  readonly removedAt: number | null;
};

/**
 * One round trip: the batch's hold and approval, then the recipient's tombstone — a pipeline, not a
 * MULTI (two commands less per transfer). Read in that order, the tombstone is at least as new as
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
    .hmget(k.batch(batchId), 'held', 'created_at', 'approved_at')
    .hget(k.recipientsRemoved, recipientKey)
    .exec()) as [[Error | null, (string | null)[]], [Error | null, string | null]];
  const [[errBatch, batch], [errTomb, tomb]] = res;
  if (errBatch || errTomb) throw errBatch ?? errTomb;
  const [held, createdAt, approvedAt] = batch;
  return {
    held: held === '1',
    createdAt: Number(createdAt ?? 0),
    approvedAt: Number(approvedAt ?? 0),
    removedAt: tomb ? removedAtOf(tomb) : null,
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
