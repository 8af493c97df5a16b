--[[
  Records what the status route said of the transfer's intent (transfer-store.ts saveIntentStatus)
  — its status, or (`untracked`) that the route does not know it — if the transfer still records
  that intent, moving the batch's settlement counters in the same step. Writes nothing when the
  record already says it (a poll run again). Returns the fields the follower needs as they were
  before, read in the same HMGET, so it reads the transfer no more itself.

  Input:
    KEYS[1] the transfer record
    KEYS[2] the batch record
    ARGV[1] intent id
    ARGV[2] status ('' = unchanged)
    ARGV[3] untracked ('1' or '')
    ARGV[4] now (ms)
    ARGV[5..] the fields to return

  Output:
    0 the transfer records another intent (or is gone): nothing written
    {value, ...} the values of ARGV[5..] before this write (nil for an absent field)
]]
--- @include "settlement"
-- An intent id longer than 64 characters is stored in two fields (saved-steps.ts fieldsOf).
local asked = { 'intent_id', 'intent_id_rest' }
for _, f in ipairs(TALLY_FIELDS) do asked[#asked + 1] = f end
for i = 5, #ARGV do asked[#asked + 1] = ARGV[i] end
local v = redis.call('HMGET', KEYS[1], unpack(asked))
if (v[1] or '') .. (v[2] or '') ~= ARGV[1] then return 0 end
local out = {}
for i = 5, #ARGV do out[#out + 1] = v[#TALLY_FIELDS + i - 2] end
local fields = tallyFields(v, 2)
local before = tallyOf(fields)
local flat = { 'updated_at', ARGV[4] }
if ARGV[2] ~= '' and fields.intent_status ~= ARGV[2] then
  fields.intent_status = ARGV[2]
  table.insert(flat, 'intent_status')
  table.insert(flat, ARGV[2])
end
if ARGV[3] == '1' and fields.intent_untracked ~= '1' then
  fields.intent_untracked = '1'
  table.insert(flat, 'intent_untracked')
  table.insert(flat, '1')
end
if #flat == 2 then return out end
redis.call('HSET', KEYS[1], unpack(flat))
local delta = {}
retally(delta, before, tallyOf(fields))
batchAdd(KEYS[2], delta)
return out
