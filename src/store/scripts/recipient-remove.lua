--[[
  Takes an address out of the book and leaves its tombstone (recipient-book.ts removeFromBook),
  even when it was not in the book.

  Input:
    KEYS[1] the book (P:recipients)
    KEYS[2] the removed addresses (P:recipients:removed)
    ARGV[1] recipient key
    ARGV[2] tombstone JSON

  Output:
    the entry it removed, or false (nil) when there was none
]]
local prev = redis.call('HGET', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return prev
