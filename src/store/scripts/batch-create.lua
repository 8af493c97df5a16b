--[[
  Creates the batch record unless it exists. Counters start as if every row were queued, so the
  worker cannot see the batch complete while ingest is still writing it.

  Input:
    KEYS[1] the batch record
    KEYS[2] the batches set
    ARGV[1] batch id
    ARGV[2] created_at (ms)
    ARGV[3..] the record's field/value pairs

  Output:
    {} when the record was created, else {digest, enqueued, via} of the existing one (via '' when
    the record predates roads: it took the service)
]]
if redis.call('EXISTS', KEYS[1]) == 1 then
  local v = redis.call('HMGET', KEYS[1], 'digest', 'enqueued', 'via')
  return {v[1] or '', v[2] or '0', v[3] or ''}
end
-- One HSET per slice of fields, not one per field (a batch with many dropped rows has many: a
-- slice stays under Lua's unpack limit of ~8,000 values).
local SLICE = 2000
for s = 3, #ARGV, SLICE do redis.call('HSET', KEYS[1], unpack(ARGV, s, math.min(s + SLICE - 1, #ARGV))) end
redis.call('ZADD', KEYS[2], 'NX', ARGV[2], ARGV[1])
return {}
