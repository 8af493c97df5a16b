--[[
  primaryReplicas(key, known, keep): this primary's replication id, and the most replicas it has reported
  connected since it became primary, kept in the hash `key` (P:replicas, field = replication id, so
  a promoted replica, which takes a new id, starts from what it reports). A replica that drops away
  still counts: writes wait for it (docs/replicated-redis.md, REDIS_REPLICA_ACKS=auto).
  `known` is what the caller last learnt, "<id>|<most>" (or ''): while this primary is that one and
  reports no more replicas than that, the hash is not read. With `keep` false a higher count is
  returned but not written (a read-only probe).
  Returns id, most, connected now; an id of '' when INFO may not be called (an ACL without it):
  nothing is known then, and the caller says so.
]]
local function primaryReplicas(key, known, keep)
  local info = redis.pcall('INFO', 'replication')
  if type(info) ~= 'string' then return '', 0, 0 end
  local id = string.match(info, 'master_replid:(%w+)')
  if not id then return '', 0, 0 end
  local now = tonumber(string.match(info, 'connected_slaves:(%d+)') or '0')
  local knownId, knownMost = string.match(known, '^(%w+)|(%d+)$')
  if knownId == id and now <= tonumber(knownMost) then return id, tonumber(knownMost), now end
  local most = tonumber(redis.call('HGET', key, id) or '0')
  if now > most then
    if keep then redis.call('HSET', key, id, now) end
    most = now
  end
  return id, most, now
end
