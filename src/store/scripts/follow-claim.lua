--[[
  Claims the intents due to be polled (intent-follows.ts): up to a limit of the members of the
  follow set whose score (the next poll time) has come, each re-scored to now + the claim lease in
  the same step, so another worker process skips them while this one polls, and the claims of a
  process that stopped come due again once the lease ends. One ZADD for all of them.

  Input:
    KEYS[1] the follow set (P:follow)
    ARGV[1] now (ms)
    ARGV[2] the claim lease (ms)
    ARGV[3] the most members to claim

  Output:
    {member, ...} the members claimed (none: {})
]]
local now = tonumber(ARGV[1])
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[3]))
if #due == 0 then return due end
local until_ms = string.format('%d', now + tonumber(ARGV[2]))
local pairs_ = {}
for i = 1, #due do
  pairs_[#pairs_ + 1] = until_ms
  pairs_[#pairs_ + 1] = due[i]
end
redis.call('ZADD', KEYS[1], 'XX', unpack(pairs_))
return due
