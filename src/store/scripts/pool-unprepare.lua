--[[
  A preparer, or a waiter next in line for the prepare slot, stops waiting (it gives up, shuts down,
  or could not prepare; nonce-manager.ts unprepare): its place in line is given up and its slot is
  freed for another waiter. If the lease was handed to it after it last looked, it never
  sent under it (a permit is sent only once acquire returned the lease): the lease is freed and its
  nonce goes back to the pool, as a release would.

  Input:
    KEYS[1] the pool (P:nonce:<CHAIN>:<owner>)
    KEYS[2] its presumed-used permits (…:review)
    KEYS[3] its accepted nonces (…:used)
    ARGV[1] holder (the preparer)
    ARGV[2] channel (the wake-up)

  Output:
    2 the lease handed to it freed, 1 its slot (or its place in line) freed, 0 none was its
]]
--- @include "free-lease"
local h = redis.call('HMGET', KEYS[1], 'holder', 'prep_holder', 'prep_next')
local in_line = h[3] == ARGV[1]
if in_line then redis.call('HDEL', KEYS[1], 'prep_next', 'prep_next_until') end
if h[2] == ARGV[1] then
  clear_prep(KEYS[1])
  redis.call('PUBLISH', ARGV[2], KEYS[1])
  return 1
end
if h[1] == ARGV[1] then
  free_lease(KEYS[1], ARGV[2])
  return 2
end
if in_line then return 1 end
return 0
