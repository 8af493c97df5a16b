--[[
  `APPROVAL_THRESHOLD_USDC` over the rolling window (approval-window.ts judgeUnapproved): prunes
  entries older than the window, sums the rest and, in `count` mode, adds this entry only when it
  stays under the threshold, so two enqueues at the same moment cannot both slip under it. An entry
  is counted at most once (its member is its name). Lua numbers are doubles: exact to 2^53
  micro-USDC, far above any threshold.

  Input:
    KEYS[1] the entries (zset: member -> time)
    KEYS[2] their amounts (hash: member -> micro-USDC)
    ARGV[1] member
    ARGV[2] amount (micro-USDC)
    ARGV[3] threshold (micro-USDC)
    ARGV[4] now (ms)
    ARGV[5] window (ms)
    ARGV[6] mode: `count` (judge, and count it when under), `peek` (judge only) or `recheck`
            (a worker judging a batch under its own threshold: as `count`, but an entry already
            counted is judged again — the others' sum and this amount — and not counted twice)

  Output:
    {reached (1/0), the sum before this entry (a decimal string), counted now (1/0)}: outside
    `recheck`, an entry already counted is neither reached nor counted again
]]
local now = tonumber(ARGV[4])
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[5]))
for _, m in ipairs(old) do
  redis.call('ZREM', KEYS[1], m)
  redis.call('HDEL', KEYS[2], m)
end
local own = redis.call('HGET', KEYS[2], ARGV[1])
if own and ARGV[6] ~= 'recheck' then return {0, '0', 0} end
local sum = 0
for _, v in ipairs(redis.call('HVALS', KEYS[2])) do sum = sum + tonumber(v) end
if own then
  sum = sum - tonumber(own)
  return {(sum + tonumber(ARGV[2]) >= tonumber(ARGV[3])) and 1 or 0, string.format('%d', sum), 0}
end
local reached = sum + tonumber(ARGV[2]) >= tonumber(ARGV[3])
local counted = 0
if ARGV[6] ~= 'peek' and not reached then
  redis.call('ZADD', KEYS[1], now, ARGV[1])
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
  counted = 1
end
return {reached and 1 or 0, string.format('%d', sum), counted}
