--[[
  Adds entries to the address book unless the address is in it already or was removed
  (recipient-book.ts addUnlessRemoved): what approving a batch does, atomically with a removal (a
  removal between reading and writing cannot be undone by it).

  Input:
    KEYS[1] the book (P:recipients)
    KEYS[2] the removed addresses (P:recipients:removed)
    ARGV[1..] pairs: recipient key, entry JSON

  Output:
    how many were added
]]
local added = 0
for i = 1, #ARGV, 2 do
  if redis.call('HEXISTS', KEYS[2], ARGV[i]) == 0 and redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) == 1 then
    added = added + 1
  end
end
return added
