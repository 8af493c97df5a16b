--[[
  Holds a batch for approval after it was enqueued (batch-hold.ts holdBatch): `held=1`, and the
  reason is added to `held_reason` unless it is there already. Only `approve` sets `held` back to 0.
  A hold that begins, or a reason that is new, voids the approvals given so far (docs/access.md "Four
  eyes"): they were given for another hold, or before this reason was known.

  Input:
    KEYS[1] the batch record
    KEYS[2] its approvals
    ARGV[1] reason
    ARGV[2] optional: approvals required (a worker's APPROVALS_REQUIRED): the batch's own, if
            larger, stays

  Output:
    1, or 0 when the batch does not exist
]]
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local held = redis.call('HGET', KEYS[1], 'held')
local reason = redis.call('HGET', KEYS[1], 'held_reason') or ''
local new = true
if held ~= '1' or reason == '' then
  reason = ARGV[1]
elseif not string.find(reason, ARGV[1], 1, true) then
  reason = reason .. '; ' .. ARGV[1]
else
  new = false
end
redis.call('HSET', KEYS[1], 'held', '1', 'held_reason', reason)
if ARGV[2] then
  local required = tonumber(redis.call('HGET', KEYS[1], 'approvals_required') or '1') or 1
  redis.call('HSET', KEYS[1], 'approvals_required', tostring(math.max(required, tonumber(ARGV[2]))))
end
if new then redis.call('DEL', KEYS[2]) end
return 1
