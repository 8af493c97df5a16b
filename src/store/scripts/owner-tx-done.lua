--[[
  Notes an owner's transaction mined (owner-txs.ts markDone) and drops what only sending it needed:
  its calldata (kept as its digest), gas limit, signed versions' bytes, and its send and used-seen
  marks. What says which call it was and how it went stays: its call id, target and value, each
  version's hash and fees, `fill`, and `done`. A version saved after this is refused
  (owner-tx-save-signed.lua), so nothing is added back.

  Input:
    KEYS[1] the owner's transactions (P:otx:<chain>:<owner>:txs)
    ARGV[1] nonce
    ARGV[2] `<hash>|<1 or 0>`: the version mined, and its status
    ARGV[3] the calldata's digest (owner-txs.ts callDataDigest)

  Output:
    1 noted
    0 no such transaction (never assigned): nothing written
]]
local f = ARGV[1] .. ':'
local v = redis.call('HGET', KEYS[1], f .. 'v')
if not v then return 0 end
redis.call('HSET', KEYS[1], f .. 'done', ARGV[2], f .. 'cd', ARGV[3])
local gone = { f .. 'data', f .. 'gas', f .. 'sent', f .. 'used' }
for i = 1, tonumber(v) do gone[#gone + 1] = f .. i .. ':raw' end
redis.call('HDEL', KEYS[1], unpack(gone))
return 1
