--[[
  Writes the transfer records of one chunk, each only if absent (a re-run never resets a transfer a
  worker has moved on), with its place in the batch's row and queued sets and its payment
  fingerprint. Returns each transfer's current state, so jobs are added only for `queued` ones.
  The row and queued sets get one ZADD per slice of new transfers rather than two per row: per row
  Redis runs only the record's check and write and the fingerprint's three commands.

  Input:
    KEYS[1] the batch's rows set
    KEYS[2] the batch's queued set
    KEYS[3..] per transfer: its record, its payment fingerprint
    ARGV[1] batch id
    ARGV[2] now (ms)
    ARGV[3] start of the fingerprint window (ms)
    ARGV[4] fingerprint ttl (ms)
    ARGV[5..] 9 per transfer: id, line, from, to, amount, recipient, memo, payout ('1' when the id
              is the file's), new_recipient ('1' when not in the address book)

  Output:
    {state, ...} each transfer's state after the write, in order
]]
local SLICE = 1000
local out = {}
local members = {}
local n = (#KEYS - 2) / 2
for i = 1, n do
  local tk = KEYS[1 + 2 * i]
  local fk = KEYS[2 + 2 * i]
  local a = 4 + (i - 1) * 9
  local id = ARGV[a + 1]
  local state = redis.call('HGET', tk, 'state')
  if not state then
    -- `new_recipient` is written only when set (most rows pay known recipients, and a retained
    -- record stays small), in the same HSET: one write, and one command in the AOF, per record.
    if ARGV[a + 9] == '1' then
      redis.call('HSET', tk, 'id', id, 'batch_id', ARGV[1], 'line', ARGV[a + 2], 'from', ARGV[a + 3],
        'to', ARGV[a + 4], 'amount', ARGV[a + 5], 'recipient', ARGV[a + 6], 'memo', ARGV[a + 7],
        'payout', ARGV[a + 8], 'state', 'queued', 'attempts', '0', 'updated_at', ARGV[2],
        'new_recipient', '1')
    else
      redis.call('HSET', tk, 'id', id, 'batch_id', ARGV[1], 'line', ARGV[a + 2], 'from', ARGV[a + 3],
        'to', ARGV[a + 4], 'amount', ARGV[a + 5], 'recipient', ARGV[a + 6], 'memo', ARGV[a + 7],
        'payout', ARGV[a + 8], 'state', 'queued', 'attempts', '0', 'updated_at', ARGV[2])
    end
    members[#members + 1] = ARGV[a + 2]
    members[#members + 1] = id
    redis.call('ZREMRANGEBYSCORE', fk, '-inf', '(' .. ARGV[3])
    redis.call('ZADD', fk, ARGV[2], ARGV[1] .. '/' .. id)
    redis.call('PEXPIRE', fk, ARGV[4])
    state = 'queued'
  end
  out[i] = state
end
for s = 1, #members, 2 * SLICE do
  local e = math.min(s + 2 * SLICE - 1, #members)
  redis.call('ZADD', KEYS[1], unpack(members, s, e))
  redis.call('ZADD', KEYS[2], unpack(members, s, e))
end
return out
