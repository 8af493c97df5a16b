--[[
  The permit was accepted or may have executed (nonce-lease.ts commitNonce, nonce-manager.ts
  presumeUsed): its nonce is used whoever holds the lease now. An accepted one is remembered in the
  used set (at least the last 1,000 per pool: far more than any permit stays saved unsent;
  docs/data-model.md), a presumed-used one in the review set. When the holder commits its own held nonce n as accepted and a live
  preparer prepared n + 1 (and `next` is now exactly n + 1), the lease goes straight to the preparer
  — holder := preparer, held_nonce := n + 1, for the hand-off ms (its next acquire is a re-entry and
  renews it to a full lease) — and the wake-up names it ("<key>\n<preparer>"). A live waiter next in
  line for the slot (`prep_next`, pool-acquire.lua) is given the slot after it in the same write —
  prep_holder := it, prep_nonce := n + 2, for the hand-off ms: what its acquire would be offered
  now (held_nonce + 1 with `next` + 1, the new holder not settling) — and the wake-up names it too
  ("<key>\n<preparer>\n<next in line>\n<n + 2>"), so it prepares without looking first.

  Input:
    KEYS[1] the pool (P:nonce:<CHAIN>:<owner>)
    KEYS[2] its presumed-used permits (…:review)
    KEYS[3] its accepted nonces (…:used)
    ARGV[1] holder
    ARGV[2] nonce
    ARGV[3] channel (the wake-up)
    ARGV[4] for a permit presumed used its review member, else ''
    ARGV[5] hand-off (ms)

  Output:
    2 handed off to the preparer, 1 the holder's lease freed, 0 the caller no longer held it
]]
--- @include "now-ms"
--- @include "free-lease"
local h = redis.call('HMGET', KEYS[1], 'next', 'holder', 'held_nonce', 'prep_holder', 'prep_nonce', 'prep_until', 'settling', 'handoffs', 'prep_next', 'prep_next_until')
local nxt = tonumber(h[1] or '0')
local after = tonumber(ARGV[2]) + 1
-- Written in one HSET with what follows: 'next' when it moves up.
local put = {}
if after > nxt then
  nxt = after
  table.insert(put, 'next')
  table.insert(put, string.format('%d', after))
end
if ARGV[4] ~= '' then
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[4])
else
  redis.call('ZADD', KEYS[3], ARGV[2], ARGV[2] .. '|' .. ARGV[1])
  -- The used set keeps at least its last 1,000 members: trimmed to them once every 64 nonces (at
  -- most 1,063 between two trims), not on every commit.
  if tonumber(ARGV[2]) % 64 == 0 then redis.call('ZREMRANGEBYRANK', KEYS[3], 0, -1001) end
end
if h[2] == ARGV[1] then
  local prep = h[4]
  if ARGV[4] == '' and prep and prep ~= ARGV[1] and tonumber(h[6] or '0') > now and h[3] == ARGV[2]
      and tonumber(h[5]) == after and nxt == after then
    for _, x in ipairs({ 'holder', prep, 'held_nonce', h[5], 'lease_until', now + tonumber(ARGV[5]),
        'handoffs', string.format('%d', tonumber(h[8] or '0') + 1) }) do table.insert(put, x) end
    local q = h[9]
    if q and q ~= prep and q ~= ARGV[1] and tonumber(h[10] or '0') > now then
      -- The slot goes to the waiter next in line (it overwrites the preparer's: no HDEL).
      local slot = string.format('%d', after + 1)
      for _, x in ipairs({ 'prep_holder', q, 'prep_nonce', slot, 'prep_until', now + tonumber(ARGV[5]),
          'prep_next_until', '0' }) do table.insert(put, x) end
      redis.call('HSET', KEYS[1], unpack(put))
      if h[7] then redis.call('HDEL', KEYS[1], 'settling') end
      redis.call('PUBLISH', ARGV[3], KEYS[1] .. '\n' .. prep .. '\n' .. q .. '\n' .. slot)
      return 2
    end
    redis.call('HSET', KEYS[1], unpack(put))
    if h[7] then
      redis.call('HDEL', KEYS[1], 'settling', 'prep_holder', 'prep_nonce', 'prep_until')
    else
      clear_prep(KEYS[1])
    end
    redis.call('PUBLISH', ARGV[3], KEYS[1] .. '\n' .. prep)
    return 2
  end
  if #put > 0 then redis.call('HSET', KEYS[1], unpack(put)) end
  free_lease(KEYS[1], ARGV[3])
  return 1
end
if #put > 0 then redis.call('HSET', KEYS[1], unpack(put)) end
-- A commit by a transfer that lost the lease: a prepared nonce now known used is void.
if h[4] and tonumber(h[5]) < nxt then clear_prep(KEYS[1]) end
return 0
