--[[
  Moves a transfer between states atomically, keeping the batch's counters, state sets and
  completion flag true in the same step (so a status read of a 100,000-row batch reads counters,
  never scans). The batch's settlement counters (`paid_*`, `intents_*`: settlement.lua) move in the
  same step, and `queued_rev` counts the changes to its set of `queued` transfers (approvals.ts).
  A fee estimate a send's mark saved as `est_pending` (fenced-save.lua) becomes the record's fee
  fields and enters the batch's fee/net totals in the move (applyPendingEstimate).

  A transition may run twice: when a connection drops after Redis applied it but before its reply
  arrived, the client re-sends it on reconnect (ioredis resends unanswered commands, which is what
  keeps a worker going through a Redis restart). The second run would see the state already moved
  and answer "not moved", and a worker would take a transfer it had just moved to `in_progress` for
  one another run owns, and leave it there. So each call carries a one-off operation id; the record
  keeps the last applied one with its answer (`op` = `id|previous|generation`), and a re-run of that
  id returns the first answer and changes nothing.

  moveTransfer(k, rec, m): k = { transfer, batch, states } keys (`states` the batch's state sets by
  state name, stateSets below: every key declared in KEYS, as Redis Cluster requires), rec = the record's HGETALL reply, m = { expected (comma list; '' = any), to, id, now,
  finals (comma list), op, sets (field -> value; '' deletes), dels (field -> true), lockLost (true:
  the move is fenced by a run's token the transfer's lock does not hold) }.
  Returns {1, previous, generation, record after} moved, {1, previous, generation, record, 'again'}
  this op moved it already (its first answer), {-2, ''} fenced out (nothing written), {0, current,
  0, record} not in an expected state, {-1, ''} no record. One read of the record (the HGETALL the
  caller made), one write of it (HSET, and HDEL of the cleared fields it has), one read and one
  write of the batch record (HMGET, HSET: its counters and the settlement tally after the change).
  A move to `submitted` writes the record anew (DEL, HSET) so that, its payload cleared, it is
  stored compact (docs/data-model.md "Memory"), without the fields saved empty.

  patchOf(from): the patch of a transition from ARGV[from] on (sets, dels).
]]
--- @include "settlement"
-- A fee estimate a send's mark saved as `est_pending` (fenced-save.lua), not yet in the batch's
-- totals: the move writes it as the record's fee fields and adds it to `delta` (the batch's
-- fee/net totals, less what they held for the transfer before). Returns the change to the batch's
-- 'unestimated' count: -1 when the transfer had no estimate and may still be sent.
-- The state sets passed as KEYS[first..last] (`…:state:<state>`), by state name.
local function stateSets(first, last)
  local sets = {}
  for i = first, last do
    local name = string.match(KEYS[i], ':state:([%w_]+)$')
    if not name then error('not a state set: KEYS[' .. i .. ']') end
    sets[name] = KEYS[i]
  end
  return sets
end

local function stateSet(sets, state)
  local key = sets[state]
  if not key then error('no state set passed for the state ' .. tostring(state)) end
  return key
end

local function applyPendingEstimate(rec, sets, dels, delta)
  local pending = rec.est_pending
  if pending == nil or pending == '' or dels.est_pending then return 0 end
  dels.est_pending = true
  local total, platform, gas, net = string.match(pending, '^([^|]+)|([^|]+)|([^|]+)|([^|]+)$')
  if not total then return 0 end
  local first = addEstimate(delta, rec, { total = total, net = net })
  sets.fee_total, sets.fee_platform, sets.fee_gas, sets.net_receive = total, platform, gas, net
  if first then return -1 end
  return 0
end
local function moveTransfer(k, flat, m)
  if #flat == 0 then return {-1, ''} end
  local rec = {}
  for i = 1, #flat, 2 do rec[flat[i]] = flat[i + 1] end
  local cur = rec.state
  if not cur then return {-1, ''} end
  local last = rec.op
  if last then
    local a = string.find(last, '|', 1, true)
    if a and string.sub(last, 1, a - 1) == m.op then
      local b = string.find(last, '|', a + 1, true)
      return {1, string.sub(last, a + 1, b - 1), tonumber(string.sub(last, b + 1)), flat, 'again'}
    end
  end
  if m.lockLost then return {-2, ''} end
  if m.expected ~= '' then
    local ok = false
    for s in string.gmatch(m.expected, '[^,]+') do if s == cur then ok = true end end
    if not ok then return {0, cur, 0, flat} end
  end
  local to = m.to
  local sets, dels = m.sets, m.dels
  for f in pairs(dels) do sets[f] = nil end
  sets['state'] = to
  sets['updated_at'] = m.now
  local delta = {}
  local unestimated = applyPendingEstimate(rec, sets, dels, delta)
  local after = {}
  for f, x in pairs(rec) do if not dels[f] then after[f] = x end end
  for f, x in pairs(sets) do after[f] = x end
  retally(delta, tallyOf(rec), tallyOf(after))
  local completed = 0
  local batchSets = { 'updated_at', m.now }
  local reads = {}
  local isFinal = {}
  for s in string.gmatch(m.finals, '[^,]+') do isFinal[s] = true end
  -- A transfer without a fee estimate that starts or stops being one that may still be sent
  -- (queued, in progress) moves the batch's 'unestimated' count (batch-reader.ts: totals.fee is
  -- null while it is above 0). A batch recorded before that count existed has none, and gets none.
  if cur ~= to and (after.fee_total == nil or after.fee_total == '') then
    if isOpen(cur) and not isOpen(to) then
      unestimated = unestimated - 1
    elseif isOpen(to) and not isOpen(cur) then
      unestimated = unestimated + 1
    end
  end
  if cur ~= to then
    redis.call('ZREM', stateSet(k.states, cur), m.id)
    redis.call('ZADD', stateSet(k.states, to), rec.line or '0', m.id)
    addTo(delta, 'n_' .. cur, '1', -1)
    addTo(delta, 'n_' .. to, '1', 1)
    -- The set of queued transfers changed: what an approval reviewed may not be what it would release.
    if cur == 'queued' or to == 'queued' then addTo(delta, 'queued_rev', '1', 1) end
    if isFinal[to] then reads = { 'n_queued', 'n_in_progress', 'complete' } end
  end
  if unestimated ~= 0 then table.insert(reads, 'unestimated') end
  local vals = batchValues(k.batch, delta, reads)
  if unestimated ~= 0 and vals.unestimated then
    table.insert(batchSets, 'unestimated')
    table.insert(batchSets, string.format('%d', tonumber(vals.unestimated) + unestimated))
  end
  if cur ~= to then
    if isFinal[to] then
      if tonumber(vals.n_queued or '0') + tonumber(vals.n_in_progress or '0') == 0 and vals.complete ~= '1' then
        completed = redis.call('HINCRBY', k.batch, 'generation', 1)
        table.insert(batchSets, 'complete')
        table.insert(batchSets, '1')
        table.insert(batchSets, 'completed_at')
        table.insert(batchSets, m.now)
      end
    else
      table.insert(batchSets, 'complete')
      table.insert(batchSets, '0')
    end
  end
  redis.call('HSET', k.batch, unpack(batchPairs(delta, vals, batchSets)))
  sets['op'] = m.op .. '|' .. cur .. '|' .. completed
  after['op'] = sets['op']
  local out = {}
  for f, x in pairs(after) do
    table.insert(out, f)
    table.insert(out, x)
  end
  if to == 'submitted' then
    -- Its long payload gone, the record is written anew: Redis never turns a hash that outgrew the
    -- compact (listpack) encoding back into one, and a new one with short values only stays compact.
    -- Fields saved empty (a cleared mark) are left out.
    local kept = {}
    for j = 1, #out, 2 do
      if out[j + 1] ~= '' then
        table.insert(kept, out[j])
        table.insert(kept, out[j + 1])
      end
    end
    out = kept
    redis.call('DEL', k.transfer)
    redis.call('HSET', k.transfer, unpack(out))
  else
    local put = {}
    for f, x in pairs(sets) do
      table.insert(put, f)
      table.insert(put, x)
    end
    redis.call('HSET', k.transfer, unpack(put))
    local gone = {}
    for f in pairs(dels) do if rec[f] ~= nil then table.insert(gone, f) end end
    if #gone > 0 then redis.call('HDEL', k.transfer, unpack(gone)) end
  end
  return {1, cur, completed, out}
end
-- The patch of a transition from ARGV[from] on: n = ARGV[from], then n field/value pairs (a value
-- '' deletes the field), then fields to delete.
local function patchOf(from)
  local sets, dels = {}, {}
  local n = tonumber(ARGV[from])
  local i = from + 1
  for _ = 1, n do
    if ARGV[i + 1] == '' then dels[ARGV[i]] = true else sets[ARGV[i]] = ARGV[i + 1] end
    i = i + 2
  end
  while i <= #ARGV do
    dels[ARGV[i]] = true
    i = i + 1
  end
  return sets, dels
end
