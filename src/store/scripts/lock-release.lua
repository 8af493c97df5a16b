--[[
  Releases a lock taken with a token, only while it still holds that token: a transfer's processing
  lock (transfer-store.ts unlock), the sweeper's, the audit file's, a rebalancing policy's run lock
  (token-lock.ts).

  Input:
    KEYS[1] the lock
    ARGV[1] token

  Output:
    1 released, 0 not held with that token
]]
--- @include "compare-and-delete"
return compareAndDelete(KEYS[1], ARGV[1])
