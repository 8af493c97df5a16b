--[[
  What a batch paid and how far its intents have settled (settlement.ts), kept as counters in the
  batch record (`paid_*`, `intents_*`; docs/data-model.md) by the scripts that change a transfer's
  state, fees or intent status. Each measures what the transfer adds to the counters before and
  after its change and applies the difference.

  tallyOf(fields): what the transfer adds, nil when it adds nothing (only a `submitted` transfer
    adds: its amount, fee and net, and one intent counter once its intent is final or untracked),
    from its field values by name; tallyFields(hmgetReply, offset) names the TALLY_FIELDS of an
    HMGET reply read from position offset + 1 on.
  retally(delta, before, after): adds the change to `delta` (batch field -> amount to add).
  addTo(delta, field, s, sign): adds the decimal string s to delta[field].
  batchValues(b, delta, reads): one HMGET of the batch record: the `delta` fields as they will be,
    and `reads` as they are. batchPairs(delta, vals, sets): those as one HSET's arguments.
  batchAdd(b, delta): adds `delta` to the batch record.
  isOpen(state): a transfer that may still be sent (queued, in progress), which the batch's
  `unestimated` count covers while it has no estimate.
  addEstimate(delta, fields, est): adds to `delta` the move of the batch's fee/net totals from what
  the record's fee fields (`fields`, by name) held to `est` = { total, net }; true when it is the
  first estimate of an open transfer (the batch's `unestimated` count goes down). For an estimate
  saved alone (estimate.lua) and one a send's mark left pending (move-transfer.lua).

  Amounts are exact decimal strings throughout (decAdd): a Lua number is a double, exact only up to
  2^53, and prints large values in exponent form. A batch's counters are read once and written in
  one HSET with the script's other batch fields, rather than an HINCRBY each.
]]
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
local function isOpen(state) return state == 'queued' or state == 'in_progress' end
local function addEstimate(delta, fields, est)
  addTo(delta, 'fee', fields.fee_total or '0', -1)
  addTo(delta, 'fee', est.total, 1)
  addTo(delta, 'net_receive', fields.net_receive or '0', -1)
  addTo(delta, 'net_receive', est.net, 1)
  return (fields.fee_total == nil or fields.fee_total == '') and isOpen(fields.state)
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
