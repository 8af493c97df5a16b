--[[
  Records what the status route said of the transfer's intent (transfer-store.ts saveIntentStatus)
  — its status, or (`untracked`) that the route does not know it — if the transfer still records
  that intent, moving the batch's settlement counters in the same step.

  Input:
    KEYS[1] the transfer record
    KEYS[2] the batch record
    ARGV[1] intent id
    ARGV[2] status ('' = unchanged)
    ARGV[3] untracked ('1' or '')
    ARGV[4] now (ms)

  Output:
    1 recorded, 0 the transfer records another intent
]]
--- @include "settlement"
local v = redis.call('HMGET', KEYS[1], 'intent_id', unpack(TALLY_FIELDS))
if v[1] ~= ARGV[1] then return 0 end
local fields = tallyFields(v, 1)
local before = tallyOf(fields)
local flat = { 'updated_at', ARGV[4] }
if ARGV[2] ~= '' then
  fields.intent_status = ARGV[2]
  table.insert(flat, 'intent_status')
  table.insert(flat, ARGV[2])
end
if ARGV[3] == '1' then
  fields.intent_untracked = '1'
  table.insert(flat, 'intent_untracked')
  table.insert(flat, '1')
end
redis.call('HSET', KEYS[1], unpack(flat))
local delta = {}
retally(delta, before, tallyOf(fields))
batchAdd(KEYS[2], delta)
return 1
