--[[
  Claims the payout ids of one chunk for this batch. In 'check' mode nothing is claimed: the owned
  ids are only reported. In 'strict' mode nothing of the chunk is claimed when any id is owned. In
  'skip' mode the free ids are claimed and each owned row is recorded once as a dropped row
  (`drop:<line>`, the prefix batch-writer.ts reads back), taking it out of the batch's counters in
  the same step, so re-runs and concurrent runs agree.
  The ids are read with MGET and claimed with MSET a slice at a time (one Redis call per slice, not
  two per row; a slice of 1,000 stays under Lua's unpack limit of ~8,000 values); an id this batch
  already owns is not rewritten.

  Input:
    KEYS[1] the batch record
    KEYS[2..] one payout key per id
    ARGV[1] batch id
    ARGV[2] mode: 'strict' | 'skip' | 'check'
    ARGV[3..] per id: line, the negated amount (a string: Lua numbers would print large amounts in
              exponent form), id

  Output:
    {{index, owner}, ...} the ids owned by another batch (index 1-based in the chunk)
]]
local SLICE = 1000
local n = #KEYS - 1
local cur = {}
for s = 2, #KEYS, SLICE do
  local vals = redis.call('MGET', unpack(KEYS, s, math.min(s + SLICE - 1, #KEYS)))
  for j = 1, #vals do cur[s - 2 + j] = vals[j] end
end
local owned = {}
local isOwned = {}
for j = 1, n do
  local c = cur[j]
  if c and c ~= ARGV[1] then
    owned[#owned + 1] = {j, c}
    isOwned[j] = c
  end
end
if ARGV[2] == 'check' or (ARGV[2] == 'strict' and #owned > 0) then return owned end
local pairs_ = {}
for j = 1, n do
  local a = 3 + (j - 1) * 3
  if isOwned[j] then
    local msg = 'payout id "' .. ARGV[a + 2] .. '" was already enqueued in batch ' .. isOwned[j]
    if redis.call('HSETNX', KEYS[1], 'drop:' .. ARGV[a], 'id|' .. msg) == 1 then
      redis.call('HINCRBY', KEYS[1], 'rows', -1)
      redis.call('HINCRBY', KEYS[1], 'n_queued', -1)
      redis.call('HINCRBY', KEYS[1], 'unestimated', -1)
      redis.call('HINCRBY', KEYS[1], 'amount', ARGV[a + 1])
    end
  elseif not cur[j] then
    pairs_[#pairs_ + 1] = KEYS[j + 1]
    pairs_[#pairs_ + 1] = ARGV[1]
    if #pairs_ >= 2 * SLICE then
      redis.call('MSET', unpack(pairs_))
      pairs_ = {}
    end
  end
end
if #pairs_ > 0 then redis.call('MSET', unpack(pairs_)) end
return owned
