--[[
  Gives back a transfer's reservation under `MAX_DAILY_USDC` (spend-limit.ts release): only when
  nothing was sent.

  Input:
    KEYS[1] the spend zset (member -> time)
    KEYS[2] the amounts hash (member -> micro-USDC)
    KEYS[3] the running total (a string)
    ARGV[1] member (the transfer)

  Output:
    1 released, 0 it held no reservation
]]
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
local amount = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
local total = tonumber(redis.call('GET', KEYS[3]) or '0') - amount
if total < 0 then total = 0 end
redis.call('SET', KEYS[3], string.format('%d', total))
return 1
