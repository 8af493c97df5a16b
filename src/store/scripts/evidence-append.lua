--[[
  Appends a line to a transfer's evidence (transfer-store.ts appendEvidence): the record's `evidence`
  field, a JSON list of `<ISO time> <what>` lines, oldest first, of which the newest are kept. Read
  and written in one step, so that a line added by another writer meanwhile is never lost. A field
  missing or not a list (older or foreign code) starts a new list.

  Input:
    KEYS[1] the transfer record
    ARGV[1] the line, stamped
    ARGV[2] how many lines are kept

  Output:
    the evidence as stored now (the JSON list), which the run that appended carries
]]
local stored = redis.call('HGET', KEYS[1], 'evidence')
local list = {}
if stored then
  local ok, decoded = pcall(cjson.decode, stored)
  if ok and type(decoded) == 'table' then
    for _, v in ipairs(decoded) do
      if type(v) == 'string' then list[#list + 1] = v end
    end
  end
end
list[#list + 1] = ARGV[1]
local kept = tonumber(ARGV[2])
local from = math.max(1, #list - kept + 1)
local out = {}
for i = from, #list do out[#out + 1] = list[i] end
local encoded = cjson.encode(out)
redis.call('HSET', KEYS[1], 'evidence', encoded)
return encoded
