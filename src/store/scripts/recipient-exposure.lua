--[[
  `NEW_RECIPIENT_MAX_USDC` (new-recipient-exposure.ts judgeExposure): registers the rows paying
  addresses not yet known and sums, per address, what they are paid in all — across finished and
  unfinished batches, until the address is known — in one step, so that of two enqueues racing to
  the same new address the later one always sees the earlier, and the earlier never sees the later.
  A registered row stops counting once its transfer ended `failed`, `rejected` or `cancelled` (it
  paid nothing; a `retry` registers it again), or when it has no transfer record an hour after it
  was registered (an enqueue that crashed or was refused before writing it); those are removed.

  Every key is declared (Redis Cluster): the transfer records of the rows registered are passed by
  the caller, which reads the hashes' members first; a member registered since (another enqueue
  racing) has no record here, and the call answers 'again' before it writes anything, for the
  caller to read the members again.

  Input:
    KEYS[1..n] one exposure hash per address (member `<batch>/<transfer>` -> `<micro-USDC>|<ms>`)
    KEYS[n+1..n+m] the transfer records (`<prefix>:t:<batch>:<transfer>`) of the members ARGV names
    ARGV[1] n, the number of exposure hashes
    ARGV[2] now (ms)
    ARGV[3] grace for a row without a record (ms)
    ARGV[4] the batch being judged: its own rows count unless `rejected` or `cancelled` (a row a
            `retry` is judging is still `failed`)
    ARGV[5] m, then m members (`<batch>/<transfer>`), the one of each record in KEYS[n+1..n+m]
    ARGV[6+m..] triples: index of its address in KEYS, member, micro-USDC

  Output:
    {sums, added}: sums[i] the total of KEYS[i] as a decimal string; added the 1-based indices of
    the triples this call registered (a re-run's rows were there already); or {'again'} when a
    member has no record among KEYS (nothing written)
]]
local n = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
local grace = tonumber(ARGV[3])
local m = tonumber(ARGV[5])
local recordOf = {}
for j = 1, m do recordOf[ARGV[5 + j]] = KEYS[n + j] end
local first = 6 + m
for i = first, #ARGV, 3 do
  if not recordOf[ARGV[i + 1]] then error('recipient-exposure: no record among KEYS for a row registered') end
end
for k = 1, n do
  for _, member in ipairs(redis.call('HKEYS', KEYS[k])) do
    if not recordOf[member] then return {'again'} end
  end
end
local added = {}
local t = 0
for i = first, #ARGV, 3 do
  t = t + 1
  local key = KEYS[tonumber(ARGV[i])]
  if redis.call('HSETNX', key, ARGV[i + 1], ARGV[i + 2] .. '|' .. ARGV[2]) == 1 then
    table.insert(added, t)
  end
end
local sums = {}
for k = 1, n do
  local all = redis.call('HGETALL', KEYS[k])
  local sum = 0
  for j = 1, #all, 2 do
    local member, value = all[j], all[j + 1]
    local bar = string.find(value, '|', 1, true)
    local amount = tonumber(string.sub(value, 1, bar - 1)) or 0
    local at = tonumber(string.sub(value, bar + 1)) or 0
    local slash = string.find(member, '/', 1, true)
    local batch = string.sub(member, 1, slash - 1)
    local state = redis.call('HGET', recordOf[member], 'state')
    local failed = state == 'failed' and batch ~= ARGV[4]
    if failed or state == 'rejected' or state == 'cancelled' or (not state and now - at >= grace) then
      redis.call('HDEL', KEYS[k], member)
    else
      sum = sum + amount
    end
  end
  sums[k] = string.format('%d', sum)
end
return {sums, added}
