--[[
  A preparer woken by the commit that named it confirms the hand-off (nonce-lease.ts): it holds
  the lease at `nonce`, renewed to a full lease.

  Input:
    KEYS[1] the pool (P:nonce:<CHAIN>:<owner>)
    KEYS[2] its presumed-used permits (…:review)
    KEYS[3] its accepted nonces (…:used)
    ARGV[1] holder (the preparer)
    ARGV[2] nonce
    ARGV[3] lease (ms)

  Output:
    1 confirmed, 0 it does not hold the lease (the hand-off lease lapsed before it came)
]]
--- @include "now-ms"
local h = redis.call('HMGET', KEYS[1], 'holder', 'held_nonce')
if h[1] ~= ARGV[1] or h[2] ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'lease_until', now + tonumber(ARGV[3]))
return 1
