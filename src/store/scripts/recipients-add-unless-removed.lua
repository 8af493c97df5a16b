--[[
  Adds entries to the address book unless the address is in it already or was removed
  (recipient-book.ts addUnlessRemoved): what approving a batch does, atomically with a removal (a
  removal between reading and writing cannot be undone by it). An entry already in the book that
  no approval vouched for (added with `add` or `import`) keeps who added it and gains `vouched_by`
  and `vouched_via` from the new entry (docs/access.md "Four eyes over the address book").

  Input:
    KEYS[1] the book (P:recipients)
    KEYS[2] the removed addresses (P:recipients:removed)
    ARGV[1..] pairs: recipient key, entry JSON

  Output:
    how many were added
]]
local added = 0
for i = 1, #ARGV, 2 do
  if redis.call('HEXISTS', KEYS[2], ARGV[i]) == 0 then
    if redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) == 1 then
      added = added + 1
    else
      local ok, entry = pcall(cjson.decode, redis.call('HGET', KEYS[1], ARGV[i]))
      if ok and type(entry) == 'table' and entry.vouched_by == nil
        and string.sub(tostring(entry.via or ''), 1, 8) ~= 'approve:' then
        local new = cjson.decode(ARGV[i + 1])
        entry.vouched_by = new.added_by
        entry.vouched_via = new.via
        redis.call('HSET', KEYS[1], ARGV[i], cjson.encode(entry))
      end
    end
  end
end
return added
