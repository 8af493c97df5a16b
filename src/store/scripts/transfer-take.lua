--[[
  A run takes its transfer (transfer-store.ts take): the processing lock (as lock-take.lua), the
  record, and — unless only the lock and the record are asked for (ARGV[7] '') — a transfer in state
  ARGV[7] (`queued`) moved to ARGV[8] (`in_progress`: its `first_seen_at` set when it has none, its
  `wait_reason` cleared), in one step. A transfer that is neither final nor `needs_review` is left
  as it is while processing is paused (the paused key exists).

  Input:
    KEYS[1] the transfer record
    KEYS[2] the batch record
    KEYS[3] the transfer's processing lock
    KEYS[4] the paused flag
    KEYS[5..] the batch's state sets, one per state (`…:state:<state>`)
    ARGV[1] lock token
    ARGV[2] lock ttl (ms)
    ARGV[3] transfer id
    ARGV[4] now (ms)
    ARGV[5] final states (comma list)
    ARGV[6] operation id
    ARGV[7] the state to move from ('' = none)
    ARGV[8] the state to move to

  Output:
    {0} another holds the lock
    {1, record (HGETALL reply, as left), how}: how is 'moved', 'paused' or '' (left as it was)
]]
--- @include "move-transfer"
--- @include "take-lock"
if not takeLock(KEYS[3], ARGV[1], ARGV[2]) then return {0} end
local flat = redis.call('HGETALL', KEYS[1])
if ARGV[7] == '' or #flat == 0 then return {1, flat, ''} end
local state
for i = 1, #flat, 2 do if flat[i] == 'state' then state = flat[i + 1] end end
if state == 'needs_review' or string.find(',' .. ARGV[5] .. ',', ',' .. tostring(state) .. ',', 1, true) then
  return {1, flat, ''}
end
if redis.call('EXISTS', KEYS[4]) == 1 then return {1, flat, 'paused'} end
if state ~= ARGV[7] then return {1, flat, ''} end
local sets = {}
local seen = false
for i = 1, #flat, 2 do if flat[i] == 'first_seen_at' and flat[i + 1] ~= '' then seen = true end end
if not seen then sets['first_seen_at'] = ARGV[4] end
local r = moveTransfer({ transfer = KEYS[1], batch = KEYS[2], states = stateSets(5, #KEYS) }, flat, {
  expected = ARGV[7], to = ARGV[8], id = ARGV[3], now = ARGV[4], finals = ARGV[5], op = ARGV[6],
  sets = sets, dels = { wait_reason = true },
})
if r[1] == 1 then return {1, r[4], 'moved'} end
return {1, flat, ''}
