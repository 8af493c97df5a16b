import { formatUsdc } from '../domain/money.ts';
import { current, Later, type Ctx } from './context.ts';
import { finish } from './outcomes.ts';
import type { StepOutcome } from './pipeline-deps.ts';

/**
 * A row over this worker's MAX_TRANSFER_USDC, or of a batch over its MAX_BATCH_USDC, that the
 * enqueuing process accepted is `rejected` (nothing was signed: a final state, nothing lost, and
 * no approval lifts a limit). Otherwise the batch is judged, and held when its controls say so.
 * Returns the outcome when it ended the transfer, undefined when the run goes on.
 */
export async function enforceWorkerControls(ctx: Ctx): Promise<StepOutcome | undefined> {
  const controls = ctx.deps.controls;
  if (!controls) return undefined;
  const rec = current(ctx);
  const max = controls.maxTransferUsdc;
  if (max !== undefined && rec.amount > max) {
    return await finish(ctx, 'rejected', {
      error: {
        code: 'over_max_transfer',
        message: `amount ${formatUsdc(rec.amount)} is above the worker's MAX_TRANSFER_USDC (${formatUsdc(max)})`,
      },
    });
  }
  const verdict = await controls.check(rec.batchId);
  if (verdict.wait !== undefined) throw new Later(1_000, verdict.wait, 'lock');
  if (verdict.refusal) return await finish(ctx, 'rejected', { error: verdict.refusal });
  return undefined;
}
