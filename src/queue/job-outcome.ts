import { UnrecoverableError, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { TransferState } from '../domain/transfer.ts';
import { transferView, type TransferView } from '../store/batch-reader.ts';
import { luaScript, runScript } from '../store/lua-script.ts';
import type { TransferRecord } from '../store/transfer-record.ts';

/**
 * A transfer job's result (docs/data-model.md "BullMQ jobs"): the transfer as the job left it, in the
 * status document's names and forms (built from `transferView`, never spelled twice). It is the
 * job hash's `returnvalue` — of a completed job, and of a failed one too (written just before the
 * job fails), so an ops tool reads one field whatever the job's fate.
 */
export type JobOutcome = {
  readonly batch_id: string;
  readonly transfer_id: string;
  readonly line: number;
  readonly state: TransferState;
  readonly intent_id: string | null;
  readonly intent_status: string | null;
  readonly tx_hash: string | null;
  readonly tx_signature: string | null;
  readonly owner: string | null;
  readonly from: string;
  readonly to: string;
  readonly amount: string;
  readonly recipient: string;
  readonly fee: TransferView['fee'];
  readonly attempts: number;
  readonly error: TransferView['error'];
  readonly new_recipient: boolean;
};

export function jobOutcome(rec: TransferRecord): JobOutcome {
  const v = transferView(rec);
  return {
    batch_id: rec.batchId,
    transfer_id: v.id,
    line: v.line,
    state: v.state,
    intent_id: v.intent_id,
    intent_status: v.intent_status,
    tx_hash: v.tx_hash,
    tx_signature: v.tx_signature,
    owner: v.owner,
    from: v.from,
    to: v.to,
    amount: v.amount,
    recipient: v.recipient,
    fee: v.fee,
    attempts: v.attempts,
    error: v.error,
    new_recipient: v.new_recipient,
  };
}

/** Final states that put the job in BullMQ's failed set: nothing was paid, or nobody knows. */
export const FAILING_STATES: readonly TransferState[] = ['failed', 'rejected', 'needs_review', 'cancelled'];

export function failsJob(state: TransferState): boolean {
  return FAILING_STATES.includes(state);
}

/** `failedReason`: `<state>: <code>: <message>`, e.g. `failed: refused: the service refused …`. */
export function failedReasonOf(o: Pick<JobOutcome, 'state' | 'error'>): string {
  return o.error ? `${o.state}: ${o.error.code}: ${o.error.message}` : `${o.state}: no error recorded`;
}

/**
 * The error a job fails with when its transfer ended failed, rejected, needs_review or cancelled: BullMQ's
 * UnrecoverableError, so the queue never retries it (the pipeline already decided), with no stack
 * (the job hash would keep a stack of the worker's own frames, which says nothing about the payout).
 */
export function finalFailure(reason: string): UnrecoverableError {
  const err = new UnrecoverableError(reason.slice(0, 1000));
  err.stack = '';
  return err;
}

/**
 * Writes a result into a job hash that exists (never creates one for a removed job): `returnvalue`
 * always, `failedReason` too when given — for a job the queue itself gave up on (stalled too often),
 * whose transfer the sweeper then made final, so its reason names the transfer's state as well.
 */
const WRITE_RESULT = luaScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'returnvalue', ARGV[1])
if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], 'failedReason', ARGV[2]) end
return 1
`);

export async function writeJobResult(
  redis: Redis,
  jobKey: string,
  result: unknown,
  failedReason = '',
): Promise<boolean> {
  return (await runScript(redis, WRITE_RESULT, [jobKey], [JSON.stringify(result), failedReason])) === 1;
}

/** The Redis key of a job's hash (`<prefix>:<queue>:<job id>`). */
export function jobKeyOf(job: Pick<Job, 'queueQualifiedName' | 'id'>): string {
  return `${job.queueQualifiedName}:${job.id ?? ''}`;
}

/**
 * KEYS: the job hash. ARGV: batch id, transfer id, intent id, status. Sets the result's
 * `intent_status` when the result names that batch, transfer and intent, in one step (nothing can
 * be written in between). Only the value changes, in the text as written (`JSON.stringify`: no
 * spaces, a quote inside a string is escaped, so the first `"intent_status":` is the top-level key
 * and its value is `null` or a string). Returns `updated`, `unfinished` (the job has no result
 * yet) or `other` (ResultSync).
 */
const SYNC_INTENT_STATUS = luaScript(`
local text = redis.call('HGET', KEYS[1], 'returnvalue')
if not text then
  if redis.call('EXISTS', KEYS[1]) == 1 then return 'unfinished' end
  return 'other'
end
local ok, r = pcall(cjson.decode, text)
if not ok or type(r) ~= 'table' then return 'other' end
if r.batch_id ~= ARGV[1] or r.transfer_id ~= ARGV[2] or r.intent_id ~= ARGV[3] then return 'other' end
if r.intent_status == ARGV[4] then return 'updated' end
local _, e = string.find(text, '"intent_status":', 1, true)
if not e then return 'other' end
local rest = string.sub(text, e + 1)
local old = string.match(rest, '^null') or string.match(rest, '^"[^"\\\\]*"')
if not old then return 'other' end
local value = cjson.encode(ARGV[4])
redis.call('HSET', KEYS[1], 'returnvalue', string.sub(text, 1, e) .. value .. string.sub(rest, #old + 1))
return 'updated'
`);

/**
 * What became of a transfer job's result when its intent's status moved on: `updated` (it now says
 * `status`, or already did), `unfinished` (the job has not ended: no result yet), `other` (no such
 * job, or its result is not about this intent: an earlier round, a needs_review job that `resolve`
 * settled).
 */
export type ResultSync = 'updated' | 'unfinished' | 'other';

/**
 * Carries an intent's later status into the result of the transfer job that submitted it, so that
 * what ops dashboards read from job hashes (bull-board's "return value") is not left at `pending`
 * once the follower learned `complete` (docs/data-model.md, "Transfer job hash"). Only
 * `intent_status` changes, and only in a result naming the same batch, transfer and intent; read
 * and write are one script, so a result written in between is never lost.
 */
export async function syncIntentStatusInResult(
  redis: Redis,
  jobKey: string,
  intent: { readonly batchId: string; readonly transferId: string; readonly intentId: string },
  status: string,
): Promise<ResultSync> {
  const res = await runScript(
    redis,
    SYNC_INTENT_STATUS,
    [jobKey],
    [intent.batchId, intent.transferId, intent.intentId, status],
  );
  return res === 'updated' || res === 'unfinished' ? res : 'other';
}
