--[[
  Renews the holder's lease (nonce-lease.ts extend), and records a refusal it is settling: a holder
  settling a refusal does not know its next nonce yet, so the prepare slot is void.

  Input:
    KEYS[1] the pool (P:nonce:<CHAIN>:<owner>)
    KEYS[2] its presumed-used permits (…:review)
    KEYS[3] its accepted nonces (…:used)
    ARGV[1] holder
    ARGV[2] lease (ms)
    ARGV[3] "<nonce>|<refused at, ms>" while settling a refusal, else ''

  Output:
    1 renewed, 0 the caller does not hold the lease
]]
--- @include "now-ms"
--- @include "clear-prep"
if redis.call('HGET', KEYS[1], 'holder') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'lease_until', now + tonumber(ARGV[2]))
if ARGV[3] ~= '' then
  redis.call('HSET', KEYS[1], 'settling', ARGV[3])
  clear_prep(KEYS[1])
end
return 1
