--[[
  Sets a firing's `last_*` fields on a schedule's record (schedule-records.ts noteScheduleFiring),
  only while the record exists: a firing must not resurrect a removed schedule.

  Input:
    KEYS[1] the schedule's record
    ARGV[1..] field/value pairs

  Output:
    1 written, 0 no record
]]
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
for i = 1, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 1
