--[[
  Moves the holder's lease to a nonce the chain shows as next (signed elsewhere; nonce-lease.ts
  moveTo). The prepare slot is void.

  Input:
    KEYS[1] the pool (P:nonce:<CHAIN>:<owner>)
    KEYS[2] its presumed-used permits (…:review)
    KEYS[3] its accepted nonces (…:used)
    ARGV[1] holder
    ARGV[2] nonce
    ARGV[3] lease (ms)

  Output:
    1 moved, 0 the caller does not hold the lease
]]
--- @include "now-ms"
--- @include "clear-prep"
if redis.call('HGET', KEYS[1], 'holder') ~= ARGV[1] then return 0 end
local nxt = tonumber(redis.call('HGET', KEYS[1], 'next') or '0')
if tonumber(ARGV[2]) > nxt then redis.call('HSET', KEYS[1], 'next', ARGV[2]) end
redis.call('HSET', KEYS[1], 'held_nonce', ARGV[2], 'lease_until', now + tonumber(ARGV[3]))
redis.call('HDEL', KEYS[1], 'settling')
clear_prep(KEYS[1])
return 1
