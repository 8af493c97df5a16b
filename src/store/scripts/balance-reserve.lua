--[[
  Reserves part of a treasury owner's USDC balance for one transfer (owner-balance.ts reserve), if
  the balance reading covers it beside what is reserved already and not yet reflected at the
  reading's block. Reserving names the owner in the transfer's record and drops a reservation on
  the owner it named before, in one step: the record's `owner` is always the only owner holding a
  reservation for the transfer. One read of the reservations (HGETALL, `_floor` with them) and one
  write (HSET: `_floor` when it moves up, and the entry), the entries seen mined dropped in one HDEL.

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
    {2, floor} the reading is older than `_floor`, the highest block a decision was made at
]]
local block = tonumber(ARGV[4])
local flat = redis.call('HGETALL', KEYS[1])
local floor = -1
for i = 1, #flat, 2 do if flat[i] == '_floor' then floor = tonumber(flat[i + 1]) end end
if block < floor then return {2, string.format('%d', floor)} end
local put = {}
if block > floor then
  table.insert(put, '_floor')
  table.insert(put, ARGV[4])
end
local sum, mine, gone = 0, false, {}
for i = 1, #flat, 2 do
  local f, v = flat[i], flat[i + 1]
  if f ~= '_floor' then
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
  local free = tonumber(ARGV[3]) - sum
  if free < tonumber(ARGV[2]) then
    if #put > 0 then redis.call('HSET', KEYS[1], unpack(put)) end
    return {0, string.format('%d', free)}
  end
  table.insert(put, ARGV[1])
  table.insert(put, ARGV[2] .. '||')
end
if #put > 0 then redis.call('HSET', KEYS[1], unpack(put)) end
if KEYS[3] ~= KEYS[1] then redis.call('HDEL', KEYS[3], ARGV[1]) end
redis.call('HSET', KEYS[2], 'owner', ARGV[5])
return {1}
