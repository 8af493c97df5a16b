--[[
  Records an approval and releases the batch when it is the last one needed (approvals.ts
  recordApproval). An approval counts only for the digest it was given for, and never the
  submitter's own.

  Input:
    KEYS[1] the batch record
    KEYS[2] its approvals (hash: name -> "<ms>|<digest>")
    ARGV[1] the batch's queued_rev the digest was read at
    ARGV[2] name
    ARGV[3] now (ms)
    ARGV[4] digest
    ARGV[5] approvals required (this process's APPROVALS_REQUIRED; the batch's own, if larger, wins)

  Output:
    {status, count, required}: `not_held` (nothing recorded), `changed` (the queued rows moved
    since the digest was read: nothing recorded), `pending` (recorded; `count` distinct names, none
    the submitter's, approved this digest), `released` (recorded, and the batch released: `held` 0)
]]
local b = redis.call('HMGET', KEYS[1], 'held', 'queued_rev', 'submitted_by', 'approvals_required')
if b[1] ~= '1' then return {'not_held', 0, 0} end
if (b[2] or '') ~= ARGV[1] then return {'changed', 0, 0} end
local required = math.max(tonumber(b[4] or '1') or 1, tonumber(ARGV[5]))
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3] .. '|' .. ARGV[4])
local all = redis.call('HGETALL', KEYS[2])
local count, names = 0, {}
for i = 1, #all, 2 do
  local bar = string.find(all[i + 1], '|', 1, true)
  if all[i] ~= b[3] and bar and string.sub(all[i + 1], bar + 1) == ARGV[4] then
    count = count + 1
    table.insert(names, all[i])
  end
end
redis.call('HSET', KEYS[1], 'approvals_required', tostring(required))
if count < required then return {'pending', count, required} end
table.sort(names)
redis.call('HSET', KEYS[1], 'held', '0', 'held_reason', '', 'approved_at', ARGV[3], 'approved_by', table.concat(names, ','))
return {'released', count, required}
