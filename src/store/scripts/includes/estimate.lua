--[[
  writeEstimate(t, b, est, sets): a transfer's fee estimate written with `sets` (more field/value
  pairs of the same record, or {}) in one HSET of the record `t`, keeping the batch record `b`'s
  fee/net totals equal to the sum over its transfers (and, for a submitted transfer, its paid
  totals: settlement.lua). `est` = { total, platform, gas, net } (micro-USDC, decimal strings).
  A first estimate of a transfer that may still be sent (queued, in progress) lowers the batch's
  `unestimated` count, where the batch keeps one (see moveTransfer).
  One read and one write of the record (HMGET, HSET), and of the batch record when its totals move
  (HMGET, HSET). An estimate a send's mark left pending (`est_pending`: fenced-save.lua, not yet in
  the batch's totals) is replaced (HDEL).
]]
--- @include "settlement"
local function writeEstimate(t, b, est, sets)
  local read = redis.call('HMGET', t, 'est_pending', unpack(TALLY_FIELDS))
  local fields = tallyFields(read, 1)
  local before = tallyOf(fields)
  local delta = {}
  local first = addEstimate(delta, fields, est)
  for _, x in ipairs({ 'fee_total', est.total, 'fee_platform', est.platform, 'fee_gas', est.gas, 'net_receive', est.net }) do
    table.insert(sets, x)
  end
  redis.call('HSET', t, unpack(sets))
  -- A mark's estimate not yet in the batch's totals (fenced-save.lua) is replaced by this one.
  if read[1] then redis.call('HDEL', t, 'est_pending') end
  fields.fee_total = est.total
  fields.net_receive = est.net
  retally(delta, before, tallyOf(fields))
  for f, d in pairs(delta) do if d == '0' then delta[f] = nil end end
  local vals = batchValues(b, delta, first and { 'unestimated' } or {})
  local batchSets = {}
  if first and vals.unestimated then
    batchSets = { 'unestimated', string.format('%d', tonumber(vals.unestimated) - 1) }
  end
  local pairs_ = batchPairs(delta, vals, batchSets)
  if #pairs_ > 0 then redis.call('HSET', b, unpack(pairs_)) end
end
