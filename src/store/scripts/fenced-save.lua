--[[
  Saves steps of a transfer only while the run saving them holds the transfer's processing lock
  (transfer-store.ts saveFenced): the durable mark before a send, and taking it back when the send
  does not go. A run that lost its lock (it expired while the run was stalled, or a failover lost
  it) writes nothing and stops before it sends: two runs of one transfer never both send.
  With ARGV[2] set it also says where the write landed, for the replica acknowledgement that must
  come before the send (replica-acks.ts). The run's fee estimate, not saved yet, comes with the
  first mark as the record's `est_pending` (read as the transfer's fee: transfer-record.ts): the
  batch's totals take it when the transfer next moves (moveTransfer, in move-transfer.lua), in the
  step that moves the batch's counters anyway, so the mark reads neither the record nor the batch.

  Input:
    KEYS[1] the transfer record
    KEYS[2] its processing lock
    KEYS[3] the replicas hash (P:replicas)
    ARGV[1] the run's lock token
    ARGV[2] '' not to report the primary's replicas; else what the caller last learnt of the
            primary, "<id>|<most>", or '?' for nothing
    ARGV[3] '' or the estimate to save with it: "<fee total>|<platform fee>|<gas fee>|<net receive>"
            (micro-USDC)
    ARGV[4..] field/value pairs; an empty value deletes the field (a cleared step)

  Output:
    {0} the lock is not the run's: nothing written
    {1, replication id, most replicas since it became primary} written ({1, '', 0} when not asked)
]]
--- @include "primary-replicas"
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return {0} end
local sets, gone = {}, {}
for i = 4, #ARGV, 2 do
  if ARGV[i + 1] == '' then
    gone[#gone + 1] = ARGV[i]
  else
    sets[#sets + 1] = ARGV[i]
    sets[#sets + 1] = ARGV[i + 1]
  end
end
if ARGV[3] ~= '' then
  sets[#sets + 1] = 'est_pending'
  sets[#sets + 1] = ARGV[3]
end
if #sets > 0 then redis.call('HSET', KEYS[1], unpack(sets)) end
if #gone > 0 then redis.call('HDEL', KEYS[1], unpack(gone)) end
if ARGV[2] == '' then return {1, '', 0} end
local id, most = primaryReplicas(KEYS[3], ARGV[2], true)
return {1, id, most}
