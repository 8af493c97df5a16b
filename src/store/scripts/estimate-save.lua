--[[
  Saves a transfer's fee estimate (transfer-store.ts saveEstimate) and keeps the batch's fee/net
  totals equal to the sum over its transfers (and, for a submitted transfer, its paid totals).

  Input:
    KEYS[1] the transfer record
    KEYS[2] the batch record
    ARGV[1] fee total (micro-USDC)
    ARGV[2] platform fee (micro-USDC)
    ARGV[3] gas fee (micro-USDC)
    ARGV[4] net receive (micro-USDC)

  Output:
    1
]]
--- @include "settlement"
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
