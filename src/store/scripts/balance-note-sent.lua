--[[
  The service accepted the transfer (owner-balance.ts noteSent): its reservation records the source
  transaction's hash (or '' when the service gave none).

  Input:
    KEYS[1] the owner's reservations (P:reserve:<CHAIN>:<owner>)
    ARGV[1] holder, "<batchId>/<transferId>"
    ARGV[2] tx hash, or ''

  Output:
    1 noted, 0 the holder has no reservation
]]
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return 0 end
local amount = string.match(v, '^([^|]*)')
redis.call('HSET', KEYS[1], ARGV[1], amount .. '|' .. ARGV[2] .. '|')
return 1
