--[[
  Gives back this batch's payout-id claims (a strict refusal): only keys that still name this batch.

  Input:
    KEYS[1..] payout keys
    ARGV[1] batch id

  Output:
    1
]]
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then redis.call('DEL', KEYS[i]) end
end
return 1
