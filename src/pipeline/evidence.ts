import { withEvidence } from '../store/transfer-evidence.ts';
import type { Ctx } from './context.ts';

/**
 * Appends a line (with its time) to the transfer's evidence: what was seen that decides its fate
 * (status document's `evidence`). The job's log gets it too (evidence never holds a secret: it
 * describes, it does not copy payloads). Runs under the transfer's lock, as every step does.
 */
export async function addEvidence(ctx: Ctx, line: string): Promise<void> {
  ctx.report(null, line);
  const rec = await ctx.deps.store.load(ctx.batchId, ctx.transferId);
  await ctx.deps.store.save(ctx.batchId, ctx.transferId, {
    evidence: withEvidence(rec?.evidence ?? [], ctx.now(), line),
  });
}
