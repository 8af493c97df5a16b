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
 * the TALLY_FIELDS of an HMGET reply) and `retally(batchKey, before, after)`. Amounts stay strings for
 * HINCRBY: a Lua number prints large values in exponent form, which HINCRBY refuses.
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
local function tallyIntent(x)
  if x.status == 'complete' then return 'intents_complete' end
  if x.status == 'failed' then return 'intents_failed' end
  if x.untracked then return 'intents_untracked' end
  return nil
end
local function addMoney(b, field, s, sign)
  if s == '' or s == '0' then return end
  if sign < 0 then
    if string.sub(s, 1, 1) == '-' then s = string.sub(s, 2) else s = '-' .. s end
  end
  redis.call('HINCRBY', b, field, s)
end
local MONEY = { { 'paid_amount', 'amount' }, { 'paid_fee', 'fee' }, { 'paid_net_receive', 'net' } }
local function addTally(b, x, sign)
  if not x then return end
  for _, f in ipairs(MONEY) do addMoney(b, f[1], x[f[2]], sign) end
  local intent = tallyIntent(x)
  if intent then redis.call('HINCRBY', b, intent, sign) end
end
local function sameTally(a, b)
  if a == nil or b == nil then return a == b end
  return a.amount == b.amount and a.fee == b.fee and a.net == b.net and tallyIntent(a) == tallyIntent(b)
end
-- Moves only the counters that differ: an intent's status that changed is one HINCRBY or two, not
-- the transfer's amounts taken out and put back.
local function retally(b, before, after)
  if sameTally(before, after) then return end
  if before == nil or after == nil then
    addTally(b, before, -1)
    addTally(b, after, 1)
    return
  end
  for _, f in ipairs(MONEY) do
    if before[f[2]] ~= after[f[2]] then
      addMoney(b, f[1], before[f[2]], -1)
      addMoney(b, f[1], after[f[2]], 1)
    end
  end
  local bi, ai = tallyIntent(before), tallyIntent(after)
  if bi ~= ai then
    if bi then redis.call('HINCRBY', b, bi, -1) end
    if ai then redis.call('HINCRBY', b, ai, 1) end
  end
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
 * `settled` (README "HTTP API"): true once the batch is complete and every submitted intent has a
 * final status; null when that can never be known because the service had no status route for
 * some of them; false otherwise.
 */
export function isSettled(complete: boolean, intents: IntentCounts): boolean | null {
  if (!complete || intents.open > 0) return false;
  return intents.untracked > 0 ? null : true;
}
