--[[
  The holder learned that no permit of this owner can go through for now (nonce-lease.ts hold): it
  frees its lease and holds the pool, so every other transfer waits with the reason instead of
  being refused in turn. A chain reading above `hold_chain` ends the hold early (pool-acquire.lua).

  Input:
    KEYS[1] the pool (P:nonce:<CHAIN>:<owner>)
    KEYS[2] its presumed-used permits (…:review)
    KEYS[3] its accepted nonces (…:used)
    ARGV[1] holder
    ARGV[2] hold (ms)
    ARGV[3] the chain's nonce
    ARGV[4] reason
    ARGV[5] channel (the wake-up)

  Output:
    1 held, 0 the caller does not hold the lease
]]
--- @include "now-ms"
--- @include "free-lease"
if redis.call('HGET', KEYS[1], 'holder') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'hold_until', now + tonumber(ARGV[2]), 'hold_chain', ARGV[3], 'hold_reason', ARGV[4])
free_lease(KEYS[1], ARGV[5])
return 1
