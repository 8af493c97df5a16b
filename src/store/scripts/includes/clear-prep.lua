--[[
  clear_prep(key): forgets the prepare slot: its nonce is no longer the one the pool would hand out
  next.
]]
local function clear_prep(key)
  redis.call('HDEL', key, 'prep_holder', 'prep_nonce', 'prep_until')
end
