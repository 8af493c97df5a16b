import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { FINAL_STATES, type TransferState } from '../domain/transfer.ts';
import { keys, type Keys } from './keys.ts';
import { luaScript, runScript } from './lua-script.ts';
import { SETTLEMENT_LUA } from './settlement.ts';
import { patchFields, type TransferCounter, type TransferField, type TransferPatch } from './saved-steps.ts';
import { parseTransferRecord, type TransferRecord } from './transfer-record.ts';

/**
 * Moves a transfer between states atomically, keeping the batch's counters, state sets and
 * completion flag true in the same step (so a status read of a 100,000-row batch reads counters,
 * never scans). Returns the new completion generation when this transition completed the batch.
 *
 * The batch's settlement counters (`paid_*`, `intents_*`: settlement.ts) move in the same step.
 *
 * A transition may run twice: when a connection drops after Redis applied it but before its reply
 * arrived, the client re-sends it on reconnect (ioredis resends unanswered commands, which is what
 * keeps a worker going through a Redis restart). The second run would see the state already moved
 * and answer "not moved", and a worker would take a transfer it had just moved to `in_progress` for
 * one another run owns, and leave it there. So each call carries a one-off operation id; the
 * record keeps the last applied one with its answer (`op` = `id|previous|generation`), and a
 * re-run of that id returns the first answer and changes nothing.
 *
 * KEYS: 1 transfer, 2 batch, 3 the state-set prefix `…:state:` (the from-state set is derived from
 *       the current state read in the script)
 * ARGV: 1 expected states (comma list; '' = any), 2 to-state, 3 transfer id, 4 now,
 *       5 final states (comma list), 6 operation id, 7 n = number of field pairs, then
 *       field/value pairs (a value '' deletes the field), then fields to delete.
 * One read of the record, one write of it (and one delete), one write of the batch record: the
 * settlement tally after the change is computed from what was read and what is written. A move to
 * `submitted` then rewrites the record (HGETALL, DEL, HSET) so that, its payload cleared, it is
 * stored compact (docs/data-model.md "Memory"), without the fields saved empty.
 */
const TRANSITION = luaScript(`${SETTLEMENT_LUA}
local v = redis.call('HMGET', KEYS[1], 'op', 'line', unpack(TALLY_FIELDS))
local fields = tallyFields(v, 2)
local cur = fields.state
if not cur then return {-1, ''} end
local last = v[1]
if last then
  local a = string.find(last, '|', 1, true)
  if a and string.sub(last, 1, a - 1) == ARGV[6] then
    local b = string.find(last, '|', a + 1, true)
    return {1, string.sub(last, a + 1, b - 1), tonumber(string.sub(last, b + 1))}
  end
end
local expected = ARGV[1]
if expected ~= '' then
  local ok = false
  for s in string.gmatch(expected, '[^,]+') do if s == cur then ok = true end end
  if not ok then return {0, cur} end
end
local to = ARGV[2]
local id = ARGV[3]
local now = ARGV[4]
local before = tallyOf(fields)
-- The patch: a value '' deletes its field (an empty field is an absent one), as do the clears.
local sets, dels = {}, {}
local n = tonumber(ARGV[7])
local i = 8
for _ = 1, n do
  if ARGV[i + 1] == '' then dels[ARGV[i]] = true else sets[ARGV[i]] = ARGV[i + 1] end
  i = i + 2
end
while i <= #ARGV do
  dels[ARGV[i]] = true
  i = i + 1
end
for f in pairs(dels) do sets[f] = nil end
sets['state'] = to
sets['updated_at'] = now
for _, f in ipairs(TALLY_FIELDS) do
  if dels[f] then fields[f] = nil elseif sets[f] then fields[f] = sets[f] end
end
retally(KEYS[2], before, tallyOf(fields))
local completed = 0
local batchSets = { 'updated_at', now }
if cur ~= to then
  redis.call('ZREM', KEYS[3] .. cur, id)
  redis.call('ZADD', KEYS[3] .. to, v[2] or '0', id)
  redis.call('HINCRBY', KEYS[2], 'n_' .. cur, -1)
  redis.call('HINCRBY', KEYS[2], 'n_' .. to, 1)
  local isFinal = {}
  for s in string.gmatch(ARGV[5], '[^,]+') do isFinal[s] = true end
  if isFinal[to] then
    local b = redis.call('HMGET', KEYS[2], 'n_queued', 'n_in_progress', 'complete')
    if tonumber(b[1] or '0') + tonumber(b[2] or '0') == 0 and b[3] ~= '1' then
      completed = redis.call('HINCRBY', KEYS[2], 'generation', 1)
      table.insert(batchSets, 'complete')
      table.insert(batchSets, '1')
      table.insert(batchSets, 'completed_at')
      table.insert(batchSets, now)
    end
  else
    table.insert(batchSets, 'complete')
    table.insert(batchSets, '0')
  end
end
redis.call('HSET', KEYS[2], unpack(batchSets))
sets['op'] = ARGV[6] .. '|' .. cur .. '|' .. completed
local flat = {}
for f, x in pairs(sets) do
  table.insert(flat, f)
  table.insert(flat, x)
end
redis.call('HSET', KEYS[1], unpack(flat))
local gone = {}
for f in pairs(dels) do table.insert(gone, f) end
if #gone > 0 then redis.call('HDEL', KEYS[1], unpack(gone)) end
if to == 'submitted' then
  -- Its long payload gone, the record is written anew: Redis never turns a hash that outgrew the
  -- compact (listpack) encoding back into one, and a new one with short values only stays compact.
  -- Fields saved empty (a cleared mark) are left out.
  local all, kept = redis.call('HGETALL', KEYS[1]), {}
  for j = 1, #all, 2 do
    if all[j + 1] ~= '' then
      table.insert(kept, all[j])
      table.insert(kept, all[j + 1])
    end
  end
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], unpack(kept))
end
return {1, cur, completed}
`);

/**
 * Saves fee fields and keeps the batch's fee/net totals equal to the sum over its transfers (and,
 * for a submitted transfer, its paid totals).
 */
const SAVE_ESTIMATE = luaScript(`${SETTLEMENT_LUA}
local fields = tallyFields(redis.call('HMGET', KEYS[1], unpack(TALLY_FIELDS)), 0)
local before = tallyOf(fields)
local oldFee = tonumber(fields.fee_total or '0')
local oldNet = tonumber(fields.net_receive or '0')
redis.call('HSET', KEYS[1], 'fee_total', ARGV[1], 'fee_platform', ARGV[2], 'fee_gas', ARGV[3], 'net_receive', ARGV[4])
redis.call('HINCRBY', KEYS[2], 'fee', tonumber(ARGV[1]) - oldFee)
redis.call('HINCRBY', KEYS[2], 'net_receive', tonumber(ARGV[4]) - oldNet)
fields.fee_total = ARGV[1]
fields.net_receive = ARGV[4]
retally(KEYS[2], before, tallyOf(fields))
return 1
`);

/**
 * Records what the status route said of the transfer's intent — its status, or (`untracked`) that
 * the route does not know it — if the transfer still records that intent, moving the batch's
 * settlement counters in the same step. Returns 0 when the transfer records another intent.
 * KEYS: 1 transfer, 2 batch. ARGV: 1 intent id, 2 status ('' = unchanged), 3 untracked ('1' or ''),
 * 4 now.
 */
const SAVE_INTENT_STATUS = luaScript(`${SETTLEMENT_LUA}
local v = redis.call('HMGET', KEYS[1], 'intent_id', unpack(TALLY_FIELDS))
if v[1] ~= ARGV[1] then return 0 end
local fields = tallyFields(v, 1)
local before = tallyOf(fields)
local flat = { 'updated_at', ARGV[4] }
if ARGV[2] ~= '' then
  fields.intent_status = ARGV[2]
  table.insert(flat, 'intent_status')
  table.insert(flat, ARGV[2])
end
if ARGV[3] == '1' then
  fields.intent_untracked = '1'
  table.insert(flat, 'intent_untracked')
  table.insert(flat, '1')
end
redis.call('HSET', KEYS[1], unpack(flat))
retally(KEYS[2], before, tallyOf(fields))
return 1
`);

/**
 * `SET NX PX`, and also yes when the lock already holds this token: a lock whose reply was lost
 * and that the client re-sent on reconnect is still ours, not "held by another".
 */
const LOCK = luaScript(`
if redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`);
const RELOCK = luaScript(
  "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0",
);
const UNLOCK = luaScript(
  "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
);

export type TransitionResult =
  | { readonly ok: true; readonly previous: TransferState; readonly completedGeneration: number | null }
  | { readonly ok: false; readonly current: TransferState | null };

export type TransferStore = ReturnType<typeof createTransferStore>;

/** A store's state: its Redis, its keys and clock. */
type Store = {
  readonly redis: Redis;
  readonly prefix: string;
  readonly k: Keys;
  readonly now: () => number;
};

/** The transfer records of one prefix (docs/data-model.md); wires the top-level functions below. */
export function createTransferStore(deps: { redis: Redis; prefix: string; now?: () => number }) {
  const s: Store = {
    redis: deps.redis,
    prefix: deps.prefix,
    k: keys(deps.prefix),
    now: deps.now ?? Date.now,
  };
  return {
    keys: s.k,
    load: (batchId: string, transferId: string) => loadTransfer(s, batchId, transferId),
    save: (batchId: string, transferId: string, patch: TransferPatch) =>
      saveSteps(s, batchId, transferId, patch),
    lock: (batchId: string, transferId: string, token: string, ttlMs: number) =>
      lockTransfer(s, batchId, transferId, token, ttlMs),
    relock: (batchId: string, transferId: string, token: string, ttlMs: number) =>
      relockTransfer(s, batchId, transferId, token, ttlMs),
    unlock: (batchId: string, transferId: string, token: string) =>
      unlockTransfer(s, batchId, transferId, token),
    incr: (batchId: string, transferId: string, field: TransferCounter, by = 1) =>
      incrCounter(s, batchId, transferId, field, by),
    saveEstimate: (
      batchId: string,
      transferId: string,
      fee: { total: bigint; platform: bigint; gas: bigint },
      netReceive: bigint,
    ) => saveEstimate(s, batchId, transferId, fee, netReceive),
    saveIntentStatus: (
      batchId: string,
      transferId: string,
      intentId: string,
      said: { status: string } | { untracked: true },
    ) => saveIntentStatus(s, batchId, transferId, intentId, said),
    transition: (batchId: string, transferId: string, change: TransitionChange) =>
      transition(s, batchId, transferId, change),
  };
}

const lockKey = (s: Store, batchId: string, transferId: string) =>
  `${s.k.transfer(batchId, transferId)}:lock`;

async function loadTransfer(
  s: Store,
  batchId: string,
  transferId: string,
): Promise<TransferRecord | undefined> {
  const raw = await s.redis.hgetall(s.k.transfer(batchId, transferId));
  return parseTransferRecord(batchId, raw);
}

/** Writes saved-step fields (no state change). Each call is one atomic HSET. */
async function saveSteps(s: Store, batchId: string, transferId: string, patch: TransferPatch): Promise<void> {
  const flat: string[] = [];
  for (const [f, v] of Object.entries(patchFields(patch))) flat.push(f, v);
  flat.push('updated_at', String(s.now()));
  await s.redis.hset(s.k.transfer(batchId, transferId), ...flat);
}

/**
 * Exclusive processing of one transfer, whatever job runs it (a stalled job's second run, a retry
 * round, a settle job): `SET NX PX` with a token (see LOCK). Returns false when another holds it.
 */
async function lockTransfer(
  s: Store,
  batchId: string,
  transferId: string,
  token: string,
  ttlMs: number,
): Promise<boolean> {
  return (await runScript(s.redis, LOCK, [lockKey(s, batchId, transferId)], [token, ttlMs])) === 1;
}

/** Extends the lock if still ours; false when it was lost. */
async function relockTransfer(
  s: Store,
  batchId: string,
  transferId: string,
  token: string,
  ttlMs: number,
): Promise<boolean> {
  return (await runScript(s.redis, RELOCK, [lockKey(s, batchId, transferId)], [token, ttlMs])) === 1;
}

async function unlockTransfer(s: Store, batchId: string, transferId: string, token: string): Promise<void> {
  await runScript(s.redis, UNLOCK, [lockKey(s, batchId, transferId)], [token]);
}

async function incrCounter(
  s: Store,
  batchId: string,
  transferId: string,
  field: TransferCounter,
  by: number,
): Promise<number> {
  return await s.redis.hincrby(s.k.transfer(batchId, transferId), field, by);
}

async function saveEstimate(
  s: Store,
  batchId: string,
  transferId: string,
  fee: { total: bigint; platform: bigint; gas: bigint },
  netReceive: bigint,
): Promise<void> {
  await runScript(
    s.redis,
    SAVE_ESTIMATE,
    [s.k.transfer(batchId, transferId), s.k.batch(batchId)],
    [fee.total.toString(), fee.platform.toString(), fee.gas.toString(), netReceive.toString()],
  );
}

/**
 * What the service's status route said of the transfer's intent: its `status`, or that it does not
 * know the intent (`untracked`: a 404, after which nobody asks again). Ignored (false) when the
 * transfer no longer records `intentId`.
 */
async function saveIntentStatus(
  s: Store,
  batchId: string,
  transferId: string,
  intentId: string,
  said: { status: string } | { untracked: true },
): Promise<boolean> {
  const status = 'status' in said ? said.status : '';
  const untracked = 'untracked' in said ? '1' : '';
  const res = await runScript(
    s.redis,
    SAVE_INTENT_STATUS,
    [s.k.transfer(batchId, transferId), s.k.batch(batchId)],
    [intentId, status, untracked, String(s.now())],
  );
  return res === 1;
}

/**
 * A state change: to `to` if the current state is one of `expected` (any when empty), writing
 * `fields` and deleting `clear` in the same atomic step.
 */
export type TransitionChange = {
  expected: readonly TransferState[];
  to: TransferState;
  fields?: TransferPatch;
  clear?: readonly TransferField[];
};

/** Moves the transfer (see TRANSITION): its previous state, or why it did not move. */
async function transition(
  s: Store,
  batchId: string,
  transferId: string,
  change: TransitionChange,
): Promise<TransitionResult> {
  const pairs: string[] = [];
  for (const [f, v] of Object.entries(patchFields(change.fields ?? {}))) pairs.push(f, v);
  const result = (await runScript(
    s.redis,
    TRANSITION,
    [s.k.transfer(batchId, transferId), s.k.batch(batchId), `${s.prefix}:batch:${batchId}:state:`],
    [
      change.expected.join(','),
      change.to,
      transferId,
      String(s.now()),
      FINAL_STATES.join(','),
      randomBytes(9).toString('base64url'),
      String(pairs.length / 2),
      ...pairs,
      ...(change.clear ?? []),
    ],
  )) as [number, string, number?];
  const [code, cur, completed] = result;
  if (code === 1) {
    return {
      ok: true,
      previous: cur as TransferState,
      completedGeneration: completed ? Number(completed) : null,
    };
  }
  return { ok: false, current: code === -1 ? null : (cur as TransferState) };
}
