--[[
  Adds a chunk of transfer jobs to one queue as waiting jobs, in one step: what BullMQ's `addBulk`
  does for jobs with a custom id and no delay, priority, parent or deduplication (its addStandardJob,
  one script per job: 10 commands a job) in about 2 commands a job. A job whose id exists is left as
  it is (BullMQ's rule for a duplicate id). Each new job hash holds BullMQ's fields (name, data,
  opts, timestamp, delay, priority); the ids go to the wait list in the chunk's order (LPUSH, as
  BullMQ's FIFO add), and the queue's marker wakes the workers unless the queue is paused or at its
  global concurrency (BullMQ's isQueuePausedOrMaxed). Unlike addBulk it writes no `added`/`waiting`
  events to the queue's stream and leaves the id counter alone (a custom id never uses it): nothing
  reads the stream (queue-options.ts). Owned by job-hash.ts, whose test adds the same jobs through
  BullMQ's `addBulk` and compares the hashes, and has a BullMQ worker run the jobs.

  Input:
    KEYS[1] the wait list
    KEYS[2] the queue's meta hash
    KEYS[3] the active list
    KEYS[4] the marker
    KEYS[5..] the job hashes (`<prefix>:<queue>:<id>`), one per job, in the order of ARGV's jobs
    ARGV[1] unused ('')
    ARGV[2] timestamp (ms)
    ARGV[3..] per job, four values: id, name, data (JSON), opts (JSON, BullMQ's stored form)

  Output:
    the number of jobs added (those whose id did not exist)
]]
local ids = {}
local n = 4
for i = 3, #ARGV, 4 do
  local id = ARGV[i]
  n = n + 1
  local key = KEYS[n]
  if redis.call('EXISTS', key) == 0 then
    redis.call('HSET', key, 'name', ARGV[i + 1], 'data', ARGV[i + 2], 'opts', ARGV[i + 3],
      'timestamp', ARGV[2], 'delay', 0, 'priority', 0)
    table.insert(ids, id)
  end
end
if #ids == 0 then return 0 end
redis.call('LPUSH', KEYS[1], unpack(ids))
local meta = redis.call('HMGET', KEYS[2], 'paused', 'concurrency')
local held = meta[1] ~= false or (meta[2] ~= false and redis.call('LLEN', KEYS[3]) >= tonumber(meta[2]))
if not held then redis.call('ZADD', KEYS[4], 0, '0') end
return #ids
