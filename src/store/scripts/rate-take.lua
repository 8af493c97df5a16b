--[[
  `API_RATE_LIMIT` (rate-limiter.ts): a sliding one-second log shared by every worker process. A
  request goes only when fewer than the limit went in the last window, so no second, wherever it
  starts, holds more than the limit. One Redis clock, `TIME`, serves every machine. A member seen
  already (a try re-sent after a lost reply) is admitted without being counted again.

  Input:
    KEYS[1] the log (a sorted set, member -> admission time)
    ARGV[1] limit (requests per window)
    ARGV[2] window (ms)
    ARGV[3] a one-off member

  Output:
    0 admitted, else how many ms until the oldest entry leaves the window
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZSCORE', KEYS[1], ARGV[3]) then return 0 end
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  return 0
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return math.max(1, tonumber(oldest[2]) + window - now)
