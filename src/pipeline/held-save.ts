import type { AckVerdict, WriteSite } from '../store/replica-acks.ts';
import type { StepsPatch } from '../store/saved-steps.ts';
import {
  fencedSaveOf,
  type FencedSave,
  type FencedSaveCall,
  type SaveFence,
} from '../store/transfer-store.ts';
import type { Ctx } from './context.ts';

/*
 * A run's write that something about to leave rests on (docs/replicated-redis.md): a send's mark
 * (send-attempt.ts), the owner and generation of a CCTP call before the owner signs it
 * (cctp/cctp-flow.ts). Redis replicates asynchronously, so a failover keeps only what the promoted
 * replica had received: such a write is held by the replicas REDIS_REPLICA_ACKS asks for before
 * the run goes on.
 */

/** What a held save found: the replicas' verdict, and whether Redis answered the write at all. */
export type HeldSave = {
  readonly verdict: AckVerdict;
  /** False: the round was cut off before its answer; the write may or may not have landed. */
  readonly answered: boolean;
};

/**
 * Writes `patch` fenced by the run's lock (`fence`: its token and the record it carries) and waits
 * until the replicas hold it; on a standalone Redis (no acknowledgements) it is a fenced save and
 * nothing is waited for. A write the lock no longer allowed calls `lost` (which stops the run). The
 * carried record takes the write either way: a round cut off may have written it.
 */
export async function saveHeld(
  ctx: Ctx,
  patch: StepsPatch,
  fence: SaveFence,
  lost: (ctx: Ctx) => never,
): Promise<HeldSave> {
  const { store, acks } = ctx.deps;
  if (!acks) {
    const saved = await store.saveFenced(ctx.batchId, ctx.transferId, patch, fence);
    if (!saved.held) lost(ctx);
    if (ctx.run && saved.record) ctx.run.rec = saved.record;
    return { verdict: { ok: true, wanted: 0 }, answered: true };
  }
  let call: FencedSaveCall | undefined;
  const { reply, verdict } = await acks.writeAcked(
    (known) => (call = store.fencedSaveCall(ctx.batchId, ctx.transferId, patch, { ...fence, known })),
    (r) => siteOfHeld(fencedSaveOf(r)),
  );
  if (reply !== undefined && !fencedSaveOf(reply).held) lost(ctx);
  if (ctx.run && call?.record) ctx.run.rec = call.record;
  return { verdict, answered: reply !== undefined };
}

function siteOfHeld(saved: FencedSave): WriteSite | undefined {
  return saved.held ? saved.site : undefined;
}
