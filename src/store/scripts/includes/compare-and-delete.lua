--[[
  compareAndDelete(key, token): deletes a lock taken with a token (SET key token NX PX) only while
  it still holds that token: a holder whose lock expired and was taken by another leaves the other's
  alone. Returns 1 when it deleted the lock, else 0.
]]
local function compareAndDelete(key, token)
  if redis.call('GET', key) == token then return redis.call('DEL', key) end
  return 0
end
