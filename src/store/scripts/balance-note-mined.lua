--[[
  Receipts showed transfers' source transactions mined (owner-balance.ts noteMined): each one's
  reservation records its block, so the first balance reading at or past it drops the entry. One
  read (HMGET) and one write (HSET) for every transaction of the call.

  Input:
    KEYS[1] the owner's reservations (P:reserve:<CHAIN>:<owner>)
    ARGV, three per transaction: holder ("<batchId>/<transferId>"), tx hash, block

  Output:
    how many were noted (a holder with no reservation, or one for another transaction, is left as
    it is)
]]
local holders = {}
for i = 1, #ARGV, 3 do table.insert(holders, ARGV[i]) end
local vals = redis.call('HMGET', KEYS[1], unpack(holders))
local put = {}
for j = 1, #holders do
  local v = vals[j]
  if v then
    local amount, tx = string.match(v, '^([^|]*)|([^|]*)')
    local at = (j - 1) * 3
    if tx == ARGV[at + 2] then
      table.insert(put, holders[j])
      table.insert(put, amount .. '|' .. tx .. '|' .. ARGV[at + 3])
    end
  end
end
if #put > 0 then redis.call('HSET', KEYS[1], unpack(put)) end
return #put / 2
