--[[
  Writes a result into a job hash that exists (never creates one for a removed job): the result of
  a job about to fail (BullMQ keeps a `returnvalue` only for a completed one), and the
  `failedReason` of a job the queue itself gave up on, once its transfer was made final. Owned by
  job-hash.ts, whose test reads the result back through BullMQ's API (Job.returnvalue,
  Job.failedReason).

  Input:
    KEYS[1] the job hash
    ARGV[1] the result as JSON
    ARGV[2] the failed reason, or '' to leave it

  Output:
    1 written, 0 the job is gone (nothing written)
]]
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'returnvalue', ARGV[1])
if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], 'failedReason', ARGV[2]) end
return 1
