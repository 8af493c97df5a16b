--[[
  Extends a lock taken with a token (transfer-store.ts relock), only while it still holds that
  token.

  Input:
    KEYS[1] the lock
    ARGV[1] token
    ARGV[2] ttl (ms)

  Output:
    1 extended, 0 the lock was lost
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0
