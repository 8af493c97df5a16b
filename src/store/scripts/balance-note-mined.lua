--[[
  A receipt showed the transfer's source transaction mined (owner-balance.ts noteMined): its
  reservation records the block, so the first balance reading at or past it drops the entry.

  Input:
    KEYS[1] the owner's reservations (P:reserve:<CHAIN>:<owner>)
    ARGV[1] holder, "<batchId>/<transferId>"
    ARGV[2] tx hash
    ARGV[3] block

  Output:
    1 noted, 0 the holder has no reservation, or one for another transaction
]]
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return 0 end
local amount, tx = string.match(v, '^([^|]*)|([^|]*)')
if tx ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], amount .. '|' .. tx .. '|' .. ARGV[3])
return 1
