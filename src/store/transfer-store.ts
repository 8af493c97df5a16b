import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { FINAL_STATES, type TransferState } from '../domain/transfer.ts';
import { keys, type Keys } from './keys.ts';
import { luaScript, luaScriptFile, runScript } from './lua-script.ts';
import type { ScriptCall, WriteSite } from './replica-acks.ts';
import { SETTLEMENT_LUA } from './settlement.ts';
import { patchFields, type TransferCounter, type TransferField, type TransferPatch } from './saved-steps.ts';
import { parseTransferRecord, type TransferRecord } from './transfer-record.ts';
import { readTraceFacts, saveTraceRoot, type TraceRoot } from './transfer-trace.ts';

/**
 * Moves a transfer between states atomically, keeping the batch's counters, state sets and
 * completion flag true in the same step (so a status read of a 100,000-row batch reads counters,
 * never scans). Returns the new completion generation when this transition completed the batch.
 *
 * The batch's settlement counters (`paid_*`, `intents_*`: settlement.ts) move in the same step, and
 * `queued_rev` counts the changes to its set of `queued` transfers (approvals.ts).
 *
 * A transition may run twice: when a connection drops after Redis applied it but before its reply
 * arrived, the client re-sends it on reconnect (ioredis resends unanswered commands, which is what
 * keeps a worker going through a Redis restart). The second run would see the state already moved
 * and answer "not moved", and a worker would take a transfer it had just moved to `in_progress` for
 * one another run owns, and leave it there. So each call carries a one-off operation id; the
 * record keeps the last applied one with its answer (`op` = `id|previous|generation`), and a
 * re-run of that id returns the first answer and changes nothing.
 *
 * `moveTransfer(k, rec, m)`: k = { transfer, batch, states } keys (`states` the state-set prefix
 * `…:state:`), rec = the record's HGETALL reply, m = { expected (comma list; '' = any), to, id,
 * now, finals (comma list), op, sets (field -> value; '' deletes), dels (field -> true) }.
 * Returns {1, previous, generation, record after} moved (or this op moved it already), {0, current,
 * 0, record} not in an expected state, {-1, ''} no record. One read of the record (the HGETALL the
 * caller made), one write of it (HSET, and HDEL of the cleared fields it has), one read and one
 * write of the batch record (HMGET, HSET: its counters and the settlement tally after the change).
 * A move to `submitted` writes the record anew (DEL, HSET) so that, its payload cleared, it is
 * stored compact (docs/data-model.md "Memory"), without the fields saved empty.
 */
const TRANSITION_LUA = `${SETTLEMENT_LUA}
local function moveTransfer(k, flat, m)
  if #flat == 0 then return {-1, ''} end
  local rec = {}
  for i = 1, #flat, 2 do rec[flat[i]] = flat[i + 1] end
  local cur = rec.state
  if not cur then return {-1, ''} end
  local last = rec.op
  if last then
    local a = string.find(last, '|', 1, true)
    if a and string.sub(last, 1, a - 1) == m.op then
      local b = string.find(last, '|', a + 1, true)
      return {1, string.sub(last, a + 1, b - 1), tonumber(string.sub(last, b + 1)), flat}
    end
  end
  if m.expected ~= '' then
    local ok = false
    for s in string.gmatch(m.expected, '[^,]+') do if s == cur then ok = true end end
    if not ok then return {0, cur, 0, flat} end
  end
  local to = m.to
  local sets, dels = m.sets, m.dels
  for f in pairs(dels) do sets[f] = nil end
  sets['state'] = to
  sets['updated_at'] = m.now
  local after = {}
  for f, x in pairs(rec) do if not dels[f] then after[f] = x end end
  for f, x in pairs(sets) do after[f] = x end
  local delta = {}
  retally(delta, tallyOf(rec), tallyOf(after))
  local completed = 0
  local batchSets = { 'updated_at', m.now }
  local reads = {}
  local isFinal = {}
  for s in string.gmatch(m.finals, '[^,]+') do isFinal[s] = true end
  -- A transfer without a fee estimate that starts or stops being one that may still be sent
  -- (queued, in progress) moves the batch's 'unestimated' count (batch-reader.ts: totals.fee is
  -- null while it is above 0). A batch recorded before that count existed has none, and gets none.
  local unestimated = 0
  if cur ~= to and (after.fee_total == nil or after.fee_total == '') then
    local wasOpen = cur == 'queued' or cur == 'in_progress'
    local isOpen = to == 'queued' or to == 'in_progress'
    if wasOpen and not isOpen then unestimated = -1 elseif isOpen and not wasOpen then unestimated = 1 end
  end
  if cur ~= to then
    redis.call('ZREM', k.states .. cur, m.id)
    redis.call('ZADD', k.states .. to, rec.line or '0', m.id)
    addTo(delta, 'n_' .. cur, '1', -1)
    addTo(delta, 'n_' .. to, '1', 1)
    -- The set of queued transfers changed: what an approval reviewed may not be what it would release.
    if cur == 'queued' or to == 'queued' then addTo(delta, 'queued_rev', '1', 1) end
    if isFinal[to] then reads = { 'n_queued', 'n_in_progress', 'complete' } end
  end
  if unestimated ~= 0 then table.insert(reads, 'unestimated') end
  local vals = batchValues(k.batch, delta, reads)
  if unestimated ~= 0 and vals.unestimated then
    table.insert(batchSets, 'unestimated')
    table.insert(batchSets, string.format('%d', tonumber(vals.unestimated) + unestimated))
  end
  if cur ~= to then
    if isFinal[to] then
      if tonumber(vals.n_queued or '0') + tonumber(vals.n_in_progress or '0') == 0 and vals.complete ~= '1' then
        completed = redis.call('HINCRBY', k.batch, 'generation', 1)
        table.insert(batchSets, 'complete')
        table.insert(batchSets, '1')
        table.insert(batchSets, 'completed_at')
        table.insert(batchSets, m.now)
      end
    else
      table.insert(batchSets, 'complete')
      table.insert(batchSets, '0')
    end
  end
  redis.call('HSET', k.batch, unpack(batchPairs(delta, vals, batchSets)))
  sets['op'] = m.op .. '|' .. cur .. '|' .. completed
  after['op'] = sets['op']
  local out = {}
  for f, x in pairs(after) do
    table.insert(out, f)
    table.insert(out, x)
  end
  if to == 'submitted' then
    -- Its long payload gone, the record is written anew: Redis never turns a hash that outgrew the
    -- compact (listpack) encoding back into one, and a new one with short values only stays compact.
    -- Fields saved empty (a cleared mark) are left out.
    local kept = {}
    for j = 1, #out, 2 do
      if out[j + 1] ~= '' then
        table.insert(kept, out[j])
        table.insert(kept, out[j + 1])
      end
    end
    out = kept
    redis.call('DEL', k.transfer)
    redis.call('HSET', k.transfer, unpack(out))
  else
    local put = {}
    for f, x in pairs(sets) do
      table.insert(put, f)
      table.insert(put, x)
    end
    redis.call('HSET', k.transfer, unpack(put))
    local gone = {}
    for f in pairs(dels) do if rec[f] ~= nil then table.insert(gone, f) end end
    if #gone > 0 then redis.call('HDEL', k.transfer, unpack(gone)) end
  end
  return {1, cur, completed, out}
end
-- The patch of a transition from ARGV[from] on: n = ARGV[from], then n field/value pairs (a value
-- '' deletes the field), then fields to delete.
local function patchOf(from)
  local sets, dels = {}, {}
  local n = tonumber(ARGV[from])
  local i = from + 1
  for _ = 1, n do
    if ARGV[i + 1] == '' then dels[ARGV[i]] = true else sets[ARGV[i]] = ARGV[i + 1] end
    i = i + 2
  end
  while i <= #ARGV do
    dels[ARGV[i]] = true
    i = i + 1
  end
  return sets, dels
end
`;

/**
 * A state change (see TRANSITION_LUA). KEYS: 1 transfer, 2 batch, 3 the state-set prefix, 4 the
 * transfer's processing lock. ARGV: 1 expected states, 2 to-state, 3 transfer id, 4 now, 5 final
 * states, 6 operation id, 7 a lock token ('' = none), 8 n, then the patch (patchOf). Returns what
 * moveTransfer returns. With a token, a move (or this op's earlier move) also frees the lock if it
 * still holds that token: the run that made its transfer final needs it no more.
 */
const TRANSITION = luaScript(`${TRANSITION_LUA}
local sets, dels = patchOf(8)
local r = moveTransfer({ transfer = KEYS[1], batch = KEYS[2], states = KEYS[3] }, redis.call('HGETALL', KEYS[1]), {
  expected = ARGV[1], to = ARGV[2], id = ARGV[3], now = ARGV[4], finals = ARGV[5], op = ARGV[6],
  sets = sets, dels = dels,
})
if r[1] == 1 and ARGV[7] ~= '' and redis.call('GET', KEYS[4]) == ARGV[7] then redis.call('DEL', KEYS[4]) end
return r
`);

/**
 * `takeLock(key, token, ttlMs)`: `SET NX PX`, and also true when the lock already holds this token
 * (its expiry renewed): a lock whose reply was lost and that the client re-sent on reconnect is
 * still ours, not "held by another". Shared by LOCK and TAKE.
 */
const TAKE_LOCK_LUA = `
local function takeLock(key, token, ttlMs)
  if redis.call('SET', key, token, 'PX', ttlMs, 'NX') then return true end
  if redis.call('GET', key) ~= token then return false end
  redis.call('PEXPIRE', key, ttlMs)
  return true
end
`;
/**
 * A run takes its transfer: the processing lock (as LOCK), the record, and — unless only the lock
 * and the record are asked for (ARGV[7] '') — a transfer in state ARGV[7] (`queued`) moved to
 * ARGV[8] (`in_progress`: its `first_seen_at` set when it has none, its `wait_reason` cleared), in
 * one step. A transfer that is neither final nor `needs_review` is left as it is while processing
 * is paused (the paused key exists).
 * KEYS: 1 transfer, 2 batch, 3 the state-set prefix, 4 the lock, 5 the paused flag.
 * ARGV: 1 lock token, 2 lock ttl (ms), 3 transfer id, 4 now, 5 final states, 6 operation id,
 * 7 the state to move from ('' = none), 8 the state to move to.
 * Returns {0} when another holds the lock, else {1, record (HGETALL reply, as left), how}: how is
 * 'moved', 'paused' or '' (left as it was).
 */
const TAKE = luaScript(`${TRANSITION_LUA}${TAKE_LOCK_LUA}
if not takeLock(KEYS[4], ARGV[1], ARGV[2]) then return {0} end
local flat = redis.call('HGETALL', KEYS[1])
if ARGV[7] == '' or #flat == 0 then return {1, flat, ''} end
local state
for i = 1, #flat, 2 do if flat[i] == 'state' then state = flat[i + 1] end end
if state == 'needs_review' or string.find(',' .. ARGV[5] .. ',', ',' .. tostring(state) .. ',', 1, true) then
  return {1, flat, ''}
end
if redis.call('EXISTS', KEYS[5]) == 1 then return {1, flat, 'paused'} end
if state ~= ARGV[7] then return {1, flat, ''} end
local sets = {}
local seen = false
for i = 1, #flat, 2 do if flat[i] == 'first_seen_at' and flat[i + 1] ~= '' then seen = true end end
if not seen then sets['first_seen_at'] = ARGV[4] end
local r = moveTransfer({ transfer = KEYS[1], batch = KEYS[2], states = KEYS[3] }, flat, {
  expected = ARGV[7], to = ARGV[8], id = ARGV[3], now = ARGV[4], finals = ARGV[5], op = ARGV[6],
  sets = sets, dels = { wait_reason = true },
})
if r[1] == 1 then return {1, r[4], 'moved'} end
return {1, flat, ''}
`);

/**
 * Saves fee fields and keeps the batch's fee/net totals equal to the sum over its transfers (and,
 * for a submitted transfer, its paid totals).
 */
const SAVE_ESTIMATE = luaScript(`${SETTLEMENT_LUA}
local fields = tallyFields(redis.call('HMGET', KEYS[1], unpack(TALLY_FIELDS)), 0)
local before = tallyOf(fields)
local delta = {}
addTo(delta, 'fee', fields.fee_total or '0', -1)
addTo(delta, 'fee', ARGV[1], 1)
addTo(delta, 'net_receive', fields.net_receive or '0', -1)
addTo(delta, 'net_receive', ARGV[4], 1)
-- A first estimate of a transfer that may still be sent lowers the batch's 'unestimated' count
-- (where the batch keeps one: see moveTransfer).
if (fields.fee_total == nil or fields.fee_total == '') and (fields.state == 'queued' or fields.state == 'in_progress')
  and redis.call('HEXISTS', KEYS[2], 'unestimated') == 1 then
  redis.call('HINCRBY', KEYS[2], 'unestimated', -1)
end
redis.call('HSET', KEYS[1], 'fee_total', ARGV[1], 'fee_platform', ARGV[2], 'fee_gas', ARGV[3], 'net_receive', ARGV[4])
fields.fee_total = ARGV[1]
fields.net_receive = ARGV[4]
retally(delta, before, tallyOf(fields))
batchAdd(KEYS[2], delta)
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
local delta = {}
retally(delta, before, tallyOf(fields))
batchAdd(KEYS[2], delta)
return 1
`);

const LOCK = luaScript(`${TAKE_LOCK_LUA}
if takeLock(KEYS[1], ARGV[1], ARGV[2]) then return 1 end
return 0
`);
const RELOCK = luaScript(
  "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0",
);
const UNLOCK = luaScript(
  "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
);

const FENCED_SAVE = luaScriptFile('fenced-save.lua');

/**
 * What a save made under the run's lock found (TransferStore.saveFenced): the run no longer holds
 * the lock (nothing written), or it wrote, and where (when asked: the write a send rests on).
 */
export type FencedSave =
  { readonly held: false } | { readonly held: true; readonly site: WriteSite | undefined };

export type TransitionResult =
  | {
      readonly ok: true;
      readonly previous: TransferState;
      readonly completedGeneration: number | null;
      /** The record as the transition left it, read in the same step. */
      readonly record: TransferRecord | undefined;
    }
  | { readonly ok: false; readonly current: TransferState | null };

/**
 * What a run found when it took its transfer (TransferStore.take): whether it holds the lock, and
 * then the record as the take left it (`in_progress` when it moved a queued one), and whether
 * processing is paused.
 */
export type TakenTransfer =
  | { readonly locked: false }
  | { readonly locked: true; readonly record: TransferRecord | undefined; readonly paused: boolean };

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
    saveFenced: (batchId: string, transferId: string, patch: TransferPatch, token: string) =>
      saveFenced(s, batchId, transferId, patch, token),
    fencedSaveCall: (
      batchId: string,
      transferId: string,
      patch: TransferPatch,
      fence: { readonly token: string; readonly known: string },
    ) => fencedSaveCall(s, batchId, transferId, patch, fence),
    lock: (batchId: string, transferId: string, token: string, ttlMs: number) =>
      lockTransfer(s, batchId, transferId, token, ttlMs),
    take: (batchId: string, transferId: string, lock: { token: string; ttlMs: number }, move: boolean) =>
      takeTransfer(s, batchId, transferId, lock, move),
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
    /** The transfer's trace and route, for its run's spans (transfer-trace.ts). */
    traceFacts: (batchId: string, transferId: string) => readTraceFacts(s.redis, s.k, batchId, transferId),
    saveTraceRoot: (batchId: string, transferId: string, root: TraceRoot) =>
      saveTraceRoot(s.redis, s.k, batchId, transferId, root),
  };
}

const lockKey = (s: Store, batchId: string, transferId: string) =>
  `${s.k.transfer(batchId, transferId)}:lock`;

/** The keys a state change touches (TRANSITION, TAKE): transfer, batch, state-set prefix, lock. */
const moveKeys = (s: Store, batchId: string, transferId: string): string[] => [
  s.k.transfer(batchId, transferId),
  s.k.batch(batchId),
  `${s.prefix}:batch:${batchId}:state:`,
  lockKey(s, batchId, transferId),
];

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
 * The fenced save as a script call (fenced-save.lua): saved-step fields written only while `token`
 * holds the transfer's processing lock, and where the write landed when `known` is not '' (what the
 * caller last learnt of the primary, or '?'). Run by replica-acks.ts (writeAcked) for a send's mark,
 * or by saveFenced.
 */
function fencedSaveCall(
  s: Store,
  batchId: string,
  transferId: string,
  patch: TransferPatch,
  fence: { readonly token: string; readonly known: string },
): ScriptCall {
  const flat: string[] = [];
  for (const [f, v] of Object.entries(patchFields(patch))) flat.push(f, v);
  flat.push('updated_at', String(s.now()));
  return {
    script: FENCED_SAVE,
    keys: [s.k.transfer(batchId, transferId), lockKey(s, batchId, transferId), s.k.replicas],
    args: [fence.token, fence.known, ...flat],
  };
}

/** A fenced save's reply, read. */
export function fencedSaveOf(reply: unknown): FencedSave {
  const res = (Array.isArray(reply) ? reply : [0]) as [number, string?, number?];
  if (Number(res[0]) !== 1) return { held: false };
  const primary = String(res[1] ?? '');
  return { held: true, site: primary === '' ? undefined : { primary, replicas: Number(res[2] ?? 0) } };
}

/** Writes saved-step fields only while `token` holds the transfer's processing lock (one script). */
async function saveFenced(
  s: Store,
  batchId: string,
  transferId: string,
  patch: TransferPatch,
  token: string,
): Promise<FencedSave> {
  const call = fencedSaveCall(s, batchId, transferId, patch, { token, known: '' });
  return fencedSaveOf(await runScript(s.redis, call.script, call.keys, call.args));
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

/** Field/value pairs as Redis answers HGETALL inside a script, as a record. */
function parseFlat(batchId: string, flat: unknown): TransferRecord | undefined {
  if (!Array.isArray(flat)) return undefined;
  const raw: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) raw[String(flat[i])] = String(flat[i + 1]);
  return parseTransferRecord(batchId, raw);
}

/**
 * The lock (as lockTransfer), the record and, when `move`, a queued transfer moved to
 * `in_progress`, in one step (see TAKE). Runs once per job run: the run goes on from the record
 * it returns.
 */
async function takeTransfer(
  s: Store,
  batchId: string,
  transferId: string,
  lock: { token: string; ttlMs: number },
  move: boolean,
): Promise<TakenTransfer> {
  const res = (await runScript(
    s.redis,
    TAKE,
    [...moveKeys(s, batchId, transferId), s.k.paused],
    [
      lock.token,
      lock.ttlMs,
      transferId,
      String(s.now()),
      FINAL_STATES.join(','),
      randomBytes(9).toString('base64url'),
      move ? 'queued' : '',
      'in_progress',
    ],
  )) as [number, unknown?, string?];
  if (res[0] !== 1) return { locked: false };
  return { locked: true, record: parseFlat(batchId, res[1]), paused: res[2] === 'paused' };
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

/** The record with an estimate laid over it, as saveEstimate writes it. */
export function withEstimate(
  rec: TransferRecord,
  fee: { total: bigint; platform: bigint; gas: bigint },
  netReceive: bigint,
): TransferRecord {
  const raw = {
    ...rec.raw,
    fee_total: fee.total.toString(),
    fee_platform: fee.platform.toString(),
    fee_gas: fee.gas.toString(),
    net_receive: netReceive.toString(),
  };
  return parseTransferRecord(rec.batchId, raw) ?? rec;
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
  /**
   * The run's lock token: a move frees the transfer's processing lock in the same step if the lock
   * still holds it (a run making its transfer final).
   */
  unlock?: string;
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
  const result = (await runScript(s.redis, TRANSITION, moveKeys(s, batchId, transferId), [
    change.expected.join(','),
    change.to,
    transferId,
    String(s.now()),
    FINAL_STATES.join(','),
    randomBytes(9).toString('base64url'),
    change.unlock ?? '',
    String(pairs.length / 2),
    ...pairs,
    ...(change.clear ?? []),
  ])) as [number, string, number?, unknown?];
  const [code, cur, completed, flat] = result;
  if (code === 1) {
    return {
      ok: true,
      previous: cur as TransferState,
      completedGeneration: completed ? Number(completed) : null,
      record: parseFlat(batchId, flat),
    };
  }
  return { ok: false, current: code === -1 ? null : (cur as TransferState) };
}
