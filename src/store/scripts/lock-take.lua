--[[
  Takes a lock for a token (token-lock.ts takeTokenLock): a transfer's processing lock
  (transfer-store.ts lock: exclusive processing of one transfer, whatever job runs it), an owner's
  CCTP lease (cctp-gate.ts). True also when the lock already holds this token, its expiry renewed in
  the same step (takeLock).

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
