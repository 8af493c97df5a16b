--[[
  Takes a transfer's processing lock (transfer-store.ts lock): exclusive processing of one
  transfer, whatever job runs it. True also when the lock already holds this token (takeLock).

  Input:
    KEYS[1] the lock
    ARGV[1] token
    ARGV[2] ttl (ms)

  Output:
    1 held, 0 another holds it
]]
--- @include "take-lock"
if takeLock(KEYS[1], ARGV[1], ARGV[2]) then return 1 end
return 0
