--[[
  Gives up the call at a nonce of an owner before anything of it is signed (owner-txs.ts giveUpCall):
  from then on only a zero-value transaction from the owner to itself is signed at that nonce (it
  fills it, so the owner's later transactions are not stuck behind an empty nonce), never the call.
  A call with a signed version is not given up: it is only ever sent.

  Input:
    KEYS[1] the owner's transactions (P:otx:<chain>:<owner>:txs)
    ARGV[1] nonce

  Output:
    {1} given up (now, or before)
    {0, versions saved} the call is signed: nothing written
    {3} no such transaction (never assigned)
]]
local f = ARGV[1] .. ':'
local h = redis.call('HMGET', KEYS[1], f .. 'v', f .. 'fill')
if not h[1] then return {3} end
if h[2] == '1' then return {1} end
if tonumber(h[1]) > 0 then return {0, tonumber(h[1])} end
redis.call('HSET', KEYS[1], f .. 'fill', '1')
return {1}
