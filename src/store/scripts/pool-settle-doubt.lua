--[[
  A presumed-used permit is settled (nonce-manager.ts settleDoubt). Proven unused (at a block past its
  deadline, the chain at or below its nonce): once no presumed-used permit at or above the chain's
  nonce is left, `next` moves back down to it (an in-flight holder keeps its nonce: a refusal will
  tell it) and any hold ends.

  Input:
    KEYS[1] the pool (P:nonce:<CHAIN>:<owner>)
    KEYS[2] its presumed-used permits (…:review)
    KEYS[3] its accepted nonces (…:used)
    ARGV[1] its review member
    ARGV[2] verdict: 'used' | 'unused'
    ARGV[3] the chain's nonce at the deciding block
    ARGV[4] channel (the wake-up)

  Output:
    2 the pool moved back, 1 otherwise
]]
--- @include "clear-prep"
redis.call('ZREM', KEYS[2], ARGV[1])
if ARGV[2] ~= 'unused' then return 1 end
if redis.call('ZCOUNT', KEYS[2], ARGV[3], '+inf') > 0 then return 1 end
local nxt = tonumber(redis.call('HGET', KEYS[1], 'next') or '0')
if tonumber(ARGV[3]) < nxt then redis.call('HSET', KEYS[1], 'next', ARGV[3]) end
redis.call('HDEL', KEYS[1], 'hold_until', 'hold_chain', 'hold_reason')
-- The in-flight holder's nonce is now above the chain's: it will be refused, so n + 1 is moot.
clear_prep(KEYS[1])
redis.call('PUBLISH', ARGV[4], KEYS[1])
return 2
