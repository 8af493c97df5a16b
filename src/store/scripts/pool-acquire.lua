--[[
  A transfer asks for the pool's lease (nonce-manager.ts tryAcquire): the nonce it may sign with.
  The nonce taken is max(next, chain): nonces below it are used, ours committed or the chain's, so
  `next` moves up to it and a release gives back exactly this nonce. A chain reading above
  `hold_chain` ends a hold (the chain moved past where it was stuck).
  While another holds the lease, the caller may be offered the prepare slot: it may sign held_nonce
  + 1 and save it unsent, then wait for the hand-off. The slot is offered only for held_nonce + 1,
  only while the holder is not settling a refusal, and only when held_nonce + 1 is `next` or
  `next` + 1 (so it is never at or below a nonce known used, nor a presumed-used one: those are all
  below `next`; and never while the holder's nonce is above `next`, which the chain will refuse).
  A caller that may prepare but finds the slot taken by a live preparer waits in line for the slot
  after it (`prep_next`, alive until `prep_next_until`, renewed each time it looks): the commit that
  hands the lease to that preparer gives it the slot at once (pool-commit.lua), without its looking.

  Input:
    KEYS[1] the pool (P:nonce:<CHAIN>:<owner>)
    KEYS[2] its presumed-used permits (…:review)
    KEYS[3] its accepted nonces (…:used)
    ARGV[1] holder, "<batchId>/<transferId>"
    ARGV[2] lease (ms)
    ARGV[3] the chain's nonces(owner), or '' when not read
    ARGV[4] '1' when the caller may prepare the next permit
    ARGV[5] prepare slot (ms)

  Output:
    {1, held_nonce} re-entry: the caller holds the lease already (renewed)
    {2, nonce, expired_holder} taken; expired_holder "<holder>@<nonce or ->" when it took an
      expired lease, else ''
    {0, ms_left, preparing} another holder has the lease; preparing '1' while another waiter is its
      live preparer, '2' when moreover the caller is next in line for the slot, else ''
    {3, ms_left, reason} the pool is held
    {4, nonce, ms_left} another holder has the lease and the caller is (now) its preparer
]]
--- @include "now-ms"
local h = redis.call('HMGET', KEYS[1], 'holder', 'held_nonce', 'lease_until', 'next', 'hold_until', 'hold_chain', 'hold_reason', 'prep_holder', 'prep_until', 'settling', 'prep_next', 'prep_next_until')
local holder, held, lease_until = h[1], h[2], tonumber(h[3] or '0')
-- The caller no longer waits in line once it has the slot or the lease (written with them).
local out_of_line = {}
if h[11] == ARGV[1] then out_of_line = {'prep_next_until', '0'} end
if holder and holder ~= ARGV[1] and lease_until > now then
  if ARGV[4] == '1' and held and not h[10] then
    local want = tonumber(held) + 1
    local free = (not h[8]) or h[8] == ARGV[1] or tonumber(h[9] or '0') <= now
    local nxt = tonumber(h[4] or '0')
    if free and want >= nxt and want <= nxt + 1 then
      local nonce = string.format('%d', want)
      redis.call('HSET', KEYS[1], 'prep_holder', ARGV[1], 'prep_nonce', nonce, 'prep_until', now + tonumber(ARGV[5]), unpack(out_of_line))
      return {4, nonce, tostring(lease_until - now)}
    end
  end
  local preparing = ''
  if h[8] and h[8] ~= ARGV[1] and tonumber(h[9] or '0') > now then
    preparing = '1'
    if ARGV[4] == '1' and (h[11] == ARGV[1] or tonumber(h[12] or '0') <= now) then
      redis.call('HSET', KEYS[1], 'prep_next', ARGV[1], 'prep_next_until', now + tonumber(ARGV[5]))
      preparing = '2'
    end
  end
  return {0, tostring(lease_until - now), preparing}
end
if holder == ARGV[1] and held then
  redis.call('HSET', KEYS[1], 'lease_until', now + tonumber(ARGV[2]), unpack(out_of_line))
  return {1, held}
end
local hold_until = tonumber(h[5] or '0')
if hold_until > now and (ARGV[3] == '' or tonumber(ARGV[3]) <= tonumber(h[6] or '-1')) then
  return {3, tostring(hold_until - now), h[7] or ''}
end
if h[5] then redis.call('HDEL', KEYS[1], 'hold_until', 'hold_chain', 'hold_reason') end
local nxt = tonumber(h[4] or '0')
if ARGV[3] ~= '' and tonumber(ARGV[3]) > nxt then nxt = tonumber(ARGV[3]) end
local nonce = string.format('%d', nxt)
redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'lease_until', now + tonumber(ARGV[2]), 'next', nonce, 'held_nonce', nonce, unpack(out_of_line))
-- A slot prepared beside an earlier holder (expired, or gone) says nothing about this one's nonce:
-- it goes with `settling`, in one HDEL.
redis.call('HDEL', KEYS[1], 'settling', 'prep_holder', 'prep_nonce', 'prep_until')
local expired = ''
if holder and holder ~= ARGV[1] then expired = holder .. '@' .. (held or '-') end
return {2, nonce, expired}
