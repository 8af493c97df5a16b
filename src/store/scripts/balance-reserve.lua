--[[
  Reserves part of a treasury owner's USDC balance for one transfer (owner-balance.ts reserve), if
  the balance reading covers it beside what is reserved already and not yet reflected at the
  reading's block. Reserving names the owner in the transfer's record and drops a reservation on
  the owner it named before, in one step: the record's `owner` is always the only owner holding a
  reservation for the transfer. One read of the reservations (HGETALL, `_floor` and
  `_floor_balance` with them) and one write (HSET: `_floor` and the balance read there when it
  moves up, and the entry), the entries seen mined dropped in one HDEL.
  A reading older than `_floor` is never used: the balance read at `_floor` (by whichever worker
  decided there) decides in its place when it covers the amount, as if the caller had read at that
  block; when it does not, the caller is told to read again (a deposit may have landed since).
  Workers that each keep their own reading then do not read the chain again, on an owner's serial
  path, every time another worker's newer reading moved the floor.

  Input:
    KEYS[1] the owner's reservations (P:reserve:<CHAIN>:<owner>)
    KEYS[2] the transfer's record
    KEYS[3] the reservations of the owner the record names now (or KEYS[1])
    ARGV[1] holder, "<batchId>/<transferId>"
    ARGV[2] amount (micro-USDC)
    ARGV[3] the owner's balance at the reading (micro-USDC)
    ARGV[4] the reading's block
    ARGV[5] owner

  Output:
    {1} reserved (or reserved already)
    {0, free} the free balance (a decimal string) does not cover the amount
    {2, floor} the reading is older than `_floor`, the highest block a decision was made at, and
      the balance read there (if known) does not cover the amount
]]
local block, balance = tonumber(ARGV[4]), ARGV[3]
local flat = redis.call('HGETALL', KEYS[1])
local floor, floor_balance = -1, nil
for i = 1, #flat, 2 do
  if flat[i] == '_floor' then floor = tonumber(flat[i + 1])
  elseif flat[i] == '_floor_balance' then floor_balance = flat[i + 1] end
end
local stale = block < floor
if stale then
  if not floor_balance then return {2, string.format('%d', floor)} end
  block, balance = floor, floor_balance
end
local put = {}
if block > floor then
  for _, x in ipairs({ '_floor', ARGV[4], '_floor_balance', balance }) do table.insert(put, x) end
elseif not floor_balance then
  -- A floor set before its balance was kept: the balance read at that very block.
  for _, x in ipairs({ '_floor_balance', balance }) do table.insert(put, x) end
end
local sum, mine, gone = 0, false, {}
for i = 1, #flat, 2 do
  local f, v = flat[i], flat[i + 1]
  if f ~= '_floor' and f ~= '_floor_balance' then
    local amount, _, mined = string.match(v, '^([^|]*)|([^|]*)|(.*)$')
    if mined ~= nil and mined ~= '' and tonumber(mined) <= block then
      table.insert(gone, f)
    else
      if f == ARGV[1] then mine = true end
      sum = sum + tonumber(amount)
    end
  end
end
if #gone > 0 then redis.call('HDEL', KEYS[1], unpack(gone)) end
if not mine then
  local free = tonumber(balance) - sum
  if free < tonumber(ARGV[2]) then
    if #put > 0 then redis.call('HSET', KEYS[1], unpack(put)) end
    if stale then return {2, string.format('%d', floor)} end
    return {0, string.format('%d', free)}
  end
  table.insert(put, ARGV[1])
  table.insert(put, ARGV[2] .. '||')
end
if #put > 0 then redis.call('HSET', KEYS[1], unpack(put)) end
if KEYS[3] ~= KEYS[1] then redis.call('HDEL', KEYS[3], ARGV[1]) end
redis.call('HSET', KEYS[2], 'owner', ARGV[5])
return {1}
