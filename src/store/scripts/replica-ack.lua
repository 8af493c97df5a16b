--[[
  The write of a replica-acknowledgement round (replica-acks.ts): sent on the round's own
  connection after the writes it covers, so that a WAIT right after it on that connection counts
  the replicas holding them all (a replica applies the primary's writes in order). It says where it
  landed: a round on another primary than the writes' (a failover in between) proves nothing.

  Input:
    KEYS[1] the rounds counter (P:acks)
    KEYS[2] the replicas hash (P:replicas)
    ARGV[1] what the caller last learnt of the primary, "<id>|<most>", or ''

  Output:
    {replication id, most replicas since it became primary, replicas connected now}
]]
--- @include "primary-replicas"
redis.call('INCR', KEYS[1])
local id, most, now = primaryReplicas(KEYS[2], ARGV[1] or '', true)
return {id, most, now}
