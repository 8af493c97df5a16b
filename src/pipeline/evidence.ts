import type { Ctx } from './context.ts';
import { savedSteps } from '../store/saved-steps.ts';

/**
 * Appends a line (with its time) to the transfer's evidence: what was seen, for needs_review. The
 * job's log gets it too (evidence never holds a secret: it describes, it does not copy payloads).
 */
export async function addEvidence(ctx: Ctx, line: string): Promise<void> {
  ctx.report(null, line);
  const rec = await ctx.deps.store.load(ctx.batchId, ctx.transferId);
  const list = rec ? [...savedSteps(rec).evidence] : [];
  list.push(`${new Date(ctx.now()).toISOString()} ${line}`);
  await ctx.deps.store.save(ctx.batchId, ctx.transferId, { evidence: JSON.stringify(list.slice(-50)) });
}
