import { formatUsdc } from '../domain/money.ts';

/*
 * What a batch paid and how far its intents have settled, kept as counters in the batch record
 * (`paid_*`, `intents_*`; docs/data-model.md) by the same Lua scripts that change a transfer's
 * state, fees or intent status — so a read of a 100,000-row batch is one HGETALL, never a scan.
 *
 * Each script measures what the transfer adds to the counters before and after its change and
 * applies the difference. Only a `submitted` transfer adds anything: its amount, fee and net to
 * `paid_*`, and one to `intents_complete`, `intents_failed` or (its status route answered 404)
 * `intents_untracked` once its intent is final or cannot be followed.
 */

/**
 * Lua functions a script includes before its body: `tallyOf(fields)` (what the transfer adds,
 * nil when it adds nothing, from its field values by name: `tallyFields(hmgetReply, offset)` names
 * the TALLY_FIELDS of an HMGET reply), `retally(delta, before, after)` (adds the change to `delta`,
 * batch field -> amount to add) and the batch writes: `batchValues(b, delta, reads)` (one HMGET:
 * the `delta` fields as they will be, and `reads` as they are), `batchAdd(b, delta)`.
 *
 * Amounts are exact decimal strings throughout (`decAdd`): a Lua number is a double, exact only
 * up to 2^53, and prints large values in exponent form. A batch's counters are read once and
 * written in one HSET with the script's other batch fields, rather than an HINCRBY each.
 */
export const SETTLEMENT_LUA = `
local TALLY_FIELDS = { 'state', 'amount', 'fee_total', 'net_receive', 'intent_status', 'intent_untracked' }
local function tallyOf(v)
  if v.state ~= 'submitted' then return nil end
  return { amount = v.amount or '', fee = v.fee_total or '', net = v.net_receive or '', status = v.intent_status or '', untracked = v.intent_untracked == '1' }
end
-- The TALLY_FIELDS of an HMGET reply by name, read from position after + 1 on (absent ones left out).
local function tallyFields(v, after)
  local byName = {}
  for i, f in ipairs(TALLY_FIELDS) do if v[after + i] then byName[f] = v[after + i] end end
  return byName
end
-- Decimal strings of digits (a '-' before them for a negative one), added exactly. Below 10^15
-- each, as Lua numbers: their sum is below 2 * 10^15 < 2^53, where every integer is a double and
-- the sum of two is exact; '%d' prints it whole. Longer ones digit by digit.
local function stripZeros(s)
  s = string.gsub(s, '^0+', '')
  if s == '' then return '0' end
  return s
end
local function lessDigits(x, y)
  if #x ~= #y then return #x < #y end
  for i = 1, #x do
    local a, b = string.byte(x, i), string.byte(y, i)
    if a ~= b then return a < b end
  end
  return false
end
local function addDigits(x, y)
  local out, carry, i, j = {}, 0, #x, #y
  while i >= 1 or j >= 1 or carry > 0 do
    local d = carry + (i >= 1 and string.byte(x, i) - 48 or 0) + (j >= 1 and string.byte(y, j) - 48 or 0)
    table.insert(out, 1, string.char(48 + d % 10))
    carry = (d >= 10) and 1 or 0
    i, j = i - 1, j - 1
  end
  return stripZeros(table.concat(out))
end
-- x - y for x >= y.
local function subDigits(x, y)
  local out, borrow, i, j = {}, 0, #x, #y
  while i >= 1 do
    local d = string.byte(x, i) - 48 - borrow - (j >= 1 and string.byte(y, j) - 48 or 0)
    if d < 0 then d, borrow = d + 10, 1 else borrow = 0 end
    table.insert(out, 1, string.char(48 + d))
    i, j = i - 1, j - 1
  end
  return stripZeros(table.concat(out))
end
local function decAdd(a, b)
  if #a <= 15 and #b <= 15 then return string.format('%d', tonumber(a) + tonumber(b)) end
  local na, nb = string.sub(a, 1, 1) == '-', string.sub(b, 1, 1) == '-'
  local x, y = stripZeros(na and string.sub(a, 2) or a), stripZeros(nb and string.sub(b, 2) or b)
  local s
  if na == nb then
    s = addDigits(x, y)
  elseif lessDigits(x, y) then
    s, na = subDigits(y, x), nb
  else
    s = subDigits(x, y)
  end
  if na and s ~= '0' then return '-' .. s end
  return s
end
local function negated(s)
  if string.sub(s, 1, 1) == '-' then return string.sub(s, 2) end
  return '-' .. s
end
local function tallyIntent(x)
  if x.status == 'complete' then return 'intents_complete' end
  if x.status == 'failed' then return 'intents_failed' end
  if x.untracked then return 'intents_untracked' end
  return nil
end
-- Adds s (a decimal string; '' or '0' adds nothing) to delta[field], negated when sign < 0.
local function addTo(delta, field, s, sign)
  if s == '' or s == '0' then return end
  if sign < 0 then s = negated(s) end
  delta[field] = decAdd(delta[field] or '0', s)
end
local MONEY = { { 'paid_amount', 'amount' }, { 'paid_fee', 'fee' }, { 'paid_net_receive', 'net' } }
local function addTally(delta, x, sign)
  if not x then return end
  for _, f in ipairs(MONEY) do addTo(delta, f[1], x[f[2]], sign) end
  local intent = tallyIntent(x)
  if intent then addTo(delta, intent, '1', sign) end
end
local function sameTally(a, b)
  if a == nil or b == nil then return a == b end
  return a.amount == b.amount and a.fee == b.fee and a.net == b.net and tallyIntent(a) == tallyIntent(b)
end
-- Moves only the counters that differ: an intent's status that changed is one counter or two, not
-- the transfer's amounts taken out and put back.
local function retally(delta, before, after)
  if sameTally(before, after) then return end
  if before == nil or after == nil then
    addTally(delta, before, -1)
    addTally(delta, after, 1)
    return
  end
  for _, f in ipairs(MONEY) do
    if before[f[2]] ~= after[f[2]] then
      addTo(delta, f[1], before[f[2]], -1)
      addTo(delta, f[1], after[f[2]], 1)
    end
  end
  local bi, ai = tallyIntent(before), tallyIntent(after)
  if bi ~= ai then
    if bi then addTo(delta, bi, '1', -1) end
    if ai then addTo(delta, ai, '1', 1) end
  end
end
-- One HMGET of the batch record: the delta fields as they will be (read + delta), and the reads
-- as they are (false when absent).
local function batchValues(b, delta, reads)
  local names, seen = {}, {}
  for f in pairs(delta) do
    table.insert(names, f)
    seen[f] = true
  end
  for _, f in ipairs(reads) do
    if not seen[f] then
      table.insert(names, f)
      seen[f] = true
    end
  end
  local vals = {}
  if #names == 0 then return vals end
  local v = redis.call('HMGET', b, unpack(names))
  for i, f in ipairs(names) do vals[f] = v[i] end
  for f, d in pairs(delta) do vals[f] = decAdd(vals[f] or '0', d) end
  return vals
end
-- The delta fields' values and the field/value pairs of sets, as one HSET's arguments.
local function batchPairs(delta, vals, sets)
  local flat = {}
  for f in pairs(delta) do
    table.insert(flat, f)
    table.insert(flat, vals[f])
  end
  for _, x in ipairs(sets) do table.insert(flat, x) end
  return flat
end
-- Adds delta to the batch record: one HINCRBY for one field (exact: integers), else one HMGET and
-- one HSET.
local function batchAdd(b, delta)
  local only, n = nil, 0
  for f, d in pairs(delta) do
    if d == '0' then
      delta[f] = nil
    else
      only = f
      n = n + 1
    end
  end
  if n == 0 then return end
  if n == 1 then
    redis.call('HINCRBY', b, only, delta[only])
    return
  end
  redis.call('HSET', b, unpack(batchPairs(delta, batchValues(b, delta, {}), {})))
end
`;

/** The status document's `totals.paid`: the `submitted` transfers only. */
export type PaidTotals = { amount: string; fee: string; net_receive: string };

/**
 * Where the submitted transfers' intents are: `complete` and `failed` are final statuses of the
 * service's status route, `untracked` ones cannot be followed (the route answered 404), `open`
 * ones are not final yet (pending, detected, minted, or not asked yet). They add up to
 * `counts.submitted`.
 */
export type IntentCounts = { complete: number; failed: number; untracked: number; open: number };

const micro = (v: string | undefined): bigint => BigInt(v && /^-?[0-9]+$/.test(v) ? v : '0');
const count = (v: string | undefined): number => Math.max(0, Number(v ?? 0) || 0);

export function paidTotals(b: Record<string, string>): PaidTotals {
  return {
    amount: formatUsdc(micro(b['paid_amount'])),
    fee: formatUsdc(micro(b['paid_fee'])),
    net_receive: formatUsdc(micro(b['paid_net_receive'])),
  };
}

export function intentCounts(b: Record<string, string>): IntentCounts {
  const complete = count(b['intents_complete']);
  const failed = count(b['intents_failed']);
  const untracked = count(b['intents_untracked']);
  const open = Math.max(0, count(b['n_submitted']) - complete - failed - untracked);
  return { complete, failed, untracked, open };
}

/**
 * `settled` (docs/http-api.md): true once the batch is complete and every submitted intent has a
 * final status; null when that can never be known because the service had no status route for
 * some of them; false otherwise.
 */
export function isSettled(complete: boolean, intents: IntentCounts): boolean | null {
  if (!complete || intents.open > 0) return false;
  return intents.untracked > 0 ? null : true;
}
