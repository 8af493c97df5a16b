--[[
  Gives a call of a treasury owner its account nonce on one chain (owner-txs.ts assignNonce), once:
  a call that has one gets it back, so a call never gets a second nonce. Nonces are given in order
  with no gap: the next is the account's `next`, raised to the chain's pending nonce of the owner
  when that is higher (transactions sent from the owner by someone else). With no `next` yet and no
  chain reading given, nothing is written: the caller reads the chain and asks again.

  Input:
    KEYS[1] the owner's account on the chain (P:otx:<chain>:<owner>)
    KEYS[2] its transactions (P:otx:<chain>:<owner>:txs)
    ARGV[1] the call's id
    ARGV[2] the chain's pending nonce of the owner, or '' when not read
    ARGV[3] to, ARGV[4] data, ARGV[5] value (wei), ARGV[6] gas limit

  Output:
    {0, nonce} the call had this nonce already (nothing written)
    {1, nonce} the call was given this nonce now
    {2} nothing known of the account: read the chain's nonce and ask again
]]
local had = redis.call('HGET', KEYS[1], 'c:' .. ARGV[1])
if had then return {0, had} end
local next_ = redis.call('HGET', KEYS[1], 'next')
if not next_ and ARGV[2] == '' then return {2} end
local n = tonumber(next_ or ARGV[2])
if ARGV[2] ~= '' and tonumber(ARGV[2]) > n then n = tonumber(ARGV[2]) end
local nonce = string.format('%d', n)
redis.call('HSET', KEYS[1], 'next', string.format('%d', n + 1), 'c:' .. ARGV[1], nonce)
local f = nonce .. ':'
redis.call('HSET', KEYS[2], f .. 'call', ARGV[1], f .. 'to', ARGV[3], f .. 'data', ARGV[4],
  f .. 'value', ARGV[5], f .. 'gas', ARGV[6], f .. 'v', '0')
return {1, nonce}
