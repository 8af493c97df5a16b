--[[
  Saves a signed version of an owner's transaction before it is broadcast (owner-txs.ts
  saveSignedCall, through replica-acks.ts writeAcked: the replicas hold it before it is sent).
  Versions count up from 1, each a re-pricing of the one before at the same nonce; a version is
  saved only as the next one, so two senders of one transaction never both save theirs (the loser
  broadcasts the winner's). A zero-value self-transaction filling the nonce of a call given up
  (`fill`) is saved only once the call is given up (owner-tx-give-up.lua, which refuses a signed
  call), and after that no version of the call is. Nothing is saved at a nonce noted mined
  (owner-tx-done.lua): the caller reads it again and finds it mined.

  Input:
    KEYS[1] the owner's transactions (P:otx:<chain>:<owner>:txs)
    KEYS[2] the replicas hash (P:replicas)
    ARGV[1] nonce
    ARGV[2] the version this is (1 + the versions saved)
    ARGV[3] 'call' or 'fill'
    ARGV[4] the signed transaction (0x…), ARGV[5] its hash, ARGV[6] its fees "<maxFee>|<tip>" (wei)
    ARGV[7] what the caller last learnt of the primary, "<id>|<most>", or '?' (primary-replicas.lua)

  Output:
    {1, replication id, most replicas since it became primary} saved
    {0, versions saved} another version was saved first, or the transaction is noted mined: nothing written
    {3} no such transaction (never assigned)
    {4} a version of the call at a nonce given up, or a fill at one not given up: nothing written
]]
--- @include "primary-replicas"
local f = ARGV[1] .. ':'
local h = redis.call('HMGET', KEYS[1], f .. 'v', f .. 'fill', f .. 'done')
if not h[1] then return {3} end
local saved = tonumber(h[1])
if saved + 1 ~= tonumber(ARGV[2]) or h[3] then return {0, saved} end
if (ARGV[3] == 'fill') ~= (h[2] == '1') then return {4} end
local v = f .. ARGV[2] .. ':'
redis.call('HSET', KEYS[1], f .. 'v', ARGV[2], v .. 'raw', ARGV[4], v .. 'hash', ARGV[5], v .. 'fees', ARGV[6])
redis.call('HDEL', KEYS[1], f .. 'sent')
local id, most = primaryReplicas(KEYS[2], ARGV[7], true)
return {1, id, most}
