--[[
  A state change (transfer-store.ts transition): moves the transfer if it is in an expected state,
  writing the patch's fields and deleting its cleared ones in the same step (moveTransfer, in
  move-transfer.lua). With a lock token (a run making its transfer final: outcomes.ts), a move
  also frees the transfer's processing lock: the run needs it no more, and any other run that took
  it meanwhile (the first's lock expired while it stalled) has nothing left to do on a final
  transfer — its next fenced save finds the lock gone and stops it before it sends (fenced-save.lua),
  and whoever takes the lock next finds the transfer final. So the lock is deleted without reading
  whose it is. A re-sent call (the op's earlier move answered again) frees it only if it still holds
  this run's token: by then a later round's run may hold it.

  Input:
    KEYS[1] the transfer record
    KEYS[2] the batch record
    KEYS[3] the transfer's processing lock
    KEYS[4..] the batch's state sets, one per state (`…:state:<state>`)
    ARGV[1] expected states (comma list; '' = any)
    ARGV[2] the state to move to
    ARGV[3] transfer id
    ARGV[4] now (ms)
    ARGV[5] final states (comma list)
    ARGV[6] operation id (one-off: a re-sent call returns the first answer)
    ARGV[7] the run's lock token ('' = none)
    ARGV[8] the run's lock token the move is fenced by ('' = none): a move made only while the
            transfer's processing lock holds it, else nothing is written (a run whose lock lapsed
            while it waited on a call, another run holding the transfer now: docs/data-model.md)
    ARGV[9] n, then n field/value pairs to set (a value '' deletes the field), then fields to delete

  Output:
    {1, previous, generation, record after} moved (generation > 0 when this move completed the
    batch; a fifth value 'again' when this op had moved it already), {0, current, 0, record} not in
    an expected state, {-1, ''} no record, {-2, ''} fenced by a token the lock does not hold
    (nothing written; a re-sent call of a move this op made answers its first answer instead)
]]
--- @include "move-transfer"
--- @include "compare-and-delete"
local sets, dels = patchOf(9)
local lockLost = ARGV[8] ~= '' and redis.call('GET', KEYS[3]) ~= ARGV[8]
local r = moveTransfer({ transfer = KEYS[1], batch = KEYS[2], states = stateSets(4, #KEYS) }, redis.call('HGETALL', KEYS[1]), {
  expected = ARGV[1], to = ARGV[2], id = ARGV[3], now = ARGV[4], finals = ARGV[5], op = ARGV[6],
  sets = sets, dels = dels, lockLost = lockLost,
})
if r[1] == 1 and ARGV[7] ~= '' then
  if r[5] == 'again' then compareAndDelete(KEYS[3], ARGV[7]) else redis.call('DEL', KEYS[3]) end
end
return r
