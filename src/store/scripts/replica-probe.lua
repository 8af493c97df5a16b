--[[
  Where writes go now, read only (replica-acks.ts currentSite): an operator's action takes this
  before it writes anything, and is acknowledged once the replicas this primary has had hold what
  it wrote — on this same primary (a failover in between is refused). Writes nothing, so an action
  refused before it wrote leaves no trace.

  Input:
    KEYS[1] the replicas hash (P:replicas)
    ARGV[1] what the caller last learnt of the primary, "<id>|<most>", or ''

  Output:
    {replication id, most replicas since it became primary, replicas connected now}
]]
--- @include "primary-replicas"
local id, most, now = primaryReplicas(KEYS[1], ARGV[1] or '', false)
return {id, most, now}
