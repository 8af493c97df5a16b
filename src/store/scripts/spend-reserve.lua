--[[
  `MAX_DAILY_USDC` (spend-limit.ts reserve): prunes reservations older than the window, then
  reserves the transfer's amount only if the total stays within the cap. A transfer is reserved at
  most once (its member is its key), so a re-run never counts it twice (and re-stamps it: the
  window counts from its latest send). Lua numbers are doubles: exact to 2^53 micro-USDC (9 billion
  USDC), far above any daily cap.

  Input:
    KEYS[1] the spend zset (member -> time)
    KEYS[2] the amounts hash (member -> micro-USDC)
    KEYS[3] the running total (a string)
    ARGV[1] member (the transfer)
    ARGV[2] amount (micro-USDC)
    ARGV[3] cap (micro-USDC)
    ARGV[4] now (ms)
    ARGV[5] window (ms)

  Output:
    {1, total, '0'} reserved (or reserved already)
    {0, total, retry_at} over the cap: retry_at (ms) when the oldest reservation leaves the window
]]
local now = tonumber(ARGV[4])
local cutoff = now - tonumber(ARGV[5])
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', cutoff)
local total = tonumber(redis.call('GET', KEYS[3]) or '0')
for _, m in ipairs(old) do
  total = total - tonumber(redis.call('HGET', KEYS[2], m) or '0')
  redis.call('HDEL', KEYS[2], m)
  redis.call('ZREM', KEYS[1], m)
end
if total < 0 then total = 0 end
redis.call('SET', KEYS[3], string.format('%d', total))
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  -- Already counted: never twice. Re-stamped, so it leaves the window 24 h after its latest send.
  redis.call('ZADD', KEYS[1], now, ARGV[1])
  return {1, string.format('%d', total), '0'}
end
local amount = tonumber(ARGV[2])
if total + amount > tonumber(ARGV[3]) then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  local retry = now + 60000
  if first[2] then retry = tonumber(first[2]) + tonumber(ARGV[5]) end
  return {0, string.format('%d', total), string.format('%d', retry)}
end
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('SET', KEYS[3], string.format('%d', total + amount))
return {1, string.format('%d', total + amount), '0'}
