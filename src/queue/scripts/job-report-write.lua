--[[
  Appends lines to a transfer job's log and sets its progress, in one step and only while the job
  exists: what BullMQ's `job.log()` per line (addLog, keepLogs) and `job.updateProgress()` do, in one
  round trip (minus the progress event on the queue's stream, which nothing reads). The log is
  trimmed to the newest lines only once it is longer than it may be. Owned by job-hash.ts, whose
  test reads the result back through BullMQ's API (getJobLogs, Job.progress).

  Input:
    KEYS[1] the job's log list (`<job key>:logs`)
    KEYS[2] the job hash
    ARGV[1] lines kept
    ARGV[2] the progress as JSON, or '' to leave it
    ARGV[3..] the lines, oldest first

  Output:
    1 written, 0 the job is gone (nothing written)
]]
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
if #ARGV > 2 then
  local kept = tonumber(ARGV[1])
  if redis.call('RPUSH', KEYS[1], unpack(ARGV, 3)) > kept then redis.call('LTRIM', KEYS[1], -kept, -1) end
end
if ARGV[2] ~= '' then redis.call('HSET', KEYS[2], 'progress', ARGV[2]) end
return 1
