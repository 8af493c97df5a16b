--[[
  Writes the transfer records of one chunk, each only if absent (a re-run never resets a transfer a
  worker has moved on), with its place in the batch's row and queued sets and its payment
  fingerprint. Returns each transfer's current state, so jobs are added only for `queued` ones.
  Which records exist is read once for the chunk from the batch's rows set (ZMSCORE): this script
  writes a record and its row together, and nothing removes either, so a transfer has a record
  exactly when it has a row; only an existing one's state is read (HGET). The row and queued sets
  get one ZADD per slice of new transfers rather than two per row, and the fingerprints go to the
  day's set (one hash field per fingerprint, one expiry per chunk) rather than a key of their own
  with its own expiry, read and written with one HMGET and one HSET per slice: per new row Redis
  runs the record's write alone.

  Input:
    KEYS[1] the batch's rows set
    KEYS[2] the batch's queued set
    KEYS[3] the day's fingerprint set (keys.fingerprintDay)
    KEYS[4..] per transfer: its record
    ARGV[1] batch id
    ARGV[2] now (ms)
    ARGV[3] when the day's fingerprint set expires (ms since the epoch)
    ARGV[4] the batch's road (`via`: service, cctp or cctp-fast), written on each record
    ARGV[5..] 10 per transfer: payment fingerprint, id, line, from, to, amount, recipient, memo,
              payout ('1' when the id is the file's), new_recipient ('1' when not in the address book)

  Output:
    {state, ...} each transfer's state after the write, in order
]]
local SLICE = 1000
local out = {}
local members = {}
local fps = KEYS[3]
local n = #KEYS - 3
local ids = {}
for i = 1, n do ids[i] = ARGV[4 + (i - 1) * 10 + 2] end
local rows = n > 0 and redis.call('ZMSCORE', KEYS[1], unpack(ids)) or {}
-- An id twice in one chunk (ingest refuses that) would find the record its first row wrote.
local written = {}
-- The new transfers' fingerprints and ids, in order, for the day's set below.
local newFps = {}
local newIds = {}
for i = 1, n do
  local tk = KEYS[3 + i]
  local a = 4 + (i - 1) * 10
  local fp = ARGV[a + 1]
  local id = ARGV[a + 2]
  local state = (rows[i] or written[id]) and redis.call('HGET', tk, 'state')
  if not state then
    -- `new_recipient` is written only when set (most rows pay known recipients, and a retained
    -- record stays small), in the same HSET: one write, and one command in the AOF, per record.
    if ARGV[a + 10] == '1' then
      redis.call('HSET', tk, 'id', id, 'batch_id', ARGV[1], 'line', ARGV[a + 3], 'from', ARGV[a + 4],
        'to', ARGV[a + 5], 'amount', ARGV[a + 6], 'recipient', ARGV[a + 7], 'memo', ARGV[a + 8],
        'payout', ARGV[a + 9], 'state', 'queued', 'attempts', '0', 'updated_at', ARGV[2],
        'via', ARGV[4], 'new_recipient', '1')
    else
      redis.call('HSET', tk, 'id', id, 'batch_id', ARGV[1], 'line', ARGV[a + 3], 'from', ARGV[a + 4],
        'to', ARGV[a + 5], 'amount', ARGV[a + 6], 'recipient', ARGV[a + 7], 'memo', ARGV[a + 8],
        'payout', ARGV[a + 9], 'state', 'queued', 'attempts', '0', 'updated_at', ARGV[2],
        'via', ARGV[4])
    end
    members[#members + 1] = ARGV[a + 3]
    members[#members + 1] = id
    newFps[#newFps + 1] = fp
    newIds[#newIds + 1] = id
    written[id] = true
    state = 'queued'
  end
  out[i] = state
end
-- Each new transfer goes to its fingerprint's field in the day's set, `<ms>:<batch>/<transfer>`
-- space-separated after those already there (ids hold neither spaces, colons nor slashes). Read and
-- written a slice at a time (one HMGET and one HSET, not an HSETNX per row); a fingerprint twice in
-- a slice gets both entries in order, and a later slice reads what an earlier one wrote.
for s = 1, #newFps, SLICE do
  local e = math.min(s + SLICE - 1, #newFps)
  local cur = redis.call('HMGET', fps, unpack(newFps, s, e))
  local fields = {}
  local at = {}
  for j = s, e do
    local fp = newFps[j]
    local entry = ARGV[2] .. ':' .. ARGV[1] .. '/' .. newIds[j]
    local k = at[fp]
    if k then
      fields[k] = fields[k] .. ' ' .. entry
    else
      local c = cur[j - s + 1]
      fields[#fields + 1] = fp
      fields[#fields + 1] = c and (c .. ' ' .. entry) or entry
      at[fp] = #fields
    end
  end
  redis.call('HSET', fps, unpack(fields))
end
if #members > 0 then redis.call('PEXPIREAT', fps, ARGV[3]) end
for s = 1, #members, 2 * SLICE do
  local e = math.min(s + 2 * SLICE - 1, #members)
  redis.call('ZADD', KEYS[1], unpack(members, s, e))
  redis.call('ZADD', KEYS[2], unpack(members, s, e))
end
return out
