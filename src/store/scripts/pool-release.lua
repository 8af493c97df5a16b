--[[
  The permit can never execute (nonce-lease.ts release, nonce-manager.ts): the lease is freed and `next` stays at its
  nonce, which the next holder gets.

  Input:
    KEYS[1] the pool (P:nonce:<CHAIN>:<owner>)
    KEYS[2] its presumed-used permits (…:review)
    KEYS[3] its accepted nonces (…:used)
    ARGV[1] holder
    ARGV[2] channel (the wake-up)

  Output:
    1 released, 0 the caller did not hold the lease
]]
--- @include "free-lease"
if redis.call('HGET', KEYS[1], 'holder') == ARGV[1] then
  free_lease(KEYS[1], ARGV[2])
  return 1
end
return 0
