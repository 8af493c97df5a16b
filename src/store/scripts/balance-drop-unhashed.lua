--[[
  Drops a reservation the service gave no transaction hash for (owner-balance.ts
  dropUnhashedReservation): no receipt can ever show it mined. One with a hash is kept.

  Input:
    KEYS[1] the owner's reservations (P:reserve:<CHAIN>:<owner>)
    ARGV[1] holder, "<batchId>/<transferId>"

  Output:
    1 dropped, 0 no reservation, or one with a hash
]]
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return 0 end
local _, tx = string.match(v, '^([^|]*)|([^|]*)')
if tx ~= '' then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
return 1
