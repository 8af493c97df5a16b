--[[
  Records a transfer's trace root (transfer-trace.ts saveTraceRoot) unless it has one, on an
  existing record only: a job of a transfer that has no record makes none.

  Input:
    KEYS[1] the transfer record
    ARGV[1] the trace id and root span id, 48 hex characters

  Output:
    the `trace` field as it stands after (a run that lost a race to another learns the trace
    that won), or false when there is no record
]]
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
redis.call('HSETNX', KEYS[1], 'trace', ARGV[1])
return redis.call('HGET', KEYS[1], 'trace')
