--[[
  `INFO replication` of the master serving the project's slot (primary-watch.ts slotReplication):
  on a Redis Cluster a command without a key goes to any node, a script with one goes to the
  master owning its slot, so this reads what that master says of itself. Writes nothing.

  Input:
    KEYS[1] the replicas hash (P:replicas): only for its slot, not read

  Output:
    the text of INFO replication
]]
return redis.call('INFO', 'replication')
