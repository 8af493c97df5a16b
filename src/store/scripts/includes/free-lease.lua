--[[
  free_lease(key, channel): frees the pool's lease (and the prepare slot that went with it) and
  wakes one waiter, in any process, by publishing the pool's key on `channel`.
]]
--- @include "clear-prep"
local function free_lease(key, channel)
  redis.call('HDEL', key, 'holder', 'held_nonce', 'lease_until', 'settling', 'prep_holder', 'prep_nonce', 'prep_until')
  redis.call('PUBLISH', channel, key)
end
