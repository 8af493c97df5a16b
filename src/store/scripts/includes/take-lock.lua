--[[
  takeLock(key, token, ttlMs): `SET NX PX`, and also true when the lock already holds this token
  (its expiry renewed): a lock whose reply was lost and that the client re-sent on reconnect is
  still ours, not "held by another". Returns whether the caller holds the lock.
]]
local function takeLock(key, token, ttlMs)
  if redis.call('SET', key, token, 'PX', ttlMs, 'NX') then return true end
  if redis.call('GET', key) ~= token then return false end
  redis.call('PEXPIRE', key, ttlMs)
  return true
end
