import { formatUsdc } from '../domain/money.ts';
import { current, Later, type Ctx } from './context.ts';
import { finish } from './outcomes.ts';
import type { StepOutcome } from './pipeline-deps.ts';
import type { ControlMarks } from '../store/batch-control-marks.ts';

/** The controls' answer: the outcome when they ended the transfer; `judged` when they judged its batch now. */
type ControlsApplied = { readonly outcome?: StepOutcome; readonly judged?: boolean };

/**
 * A row over this worker's MAX_TRANSFER_USDC, or of a batch over its MAX_BATCH_USDC, that the
 * enqueuing process accepted is `rejected` (nothing was signed: a final state, nothing lost, and
 * no approval lifts a limit). Otherwise the batch is judged from its control marks (`marks`, as the
 * run read them; absent, read now), or judged anew and held when its controls say so (`judged`).
 */
export async function enforceWorkerControls(ctx: Ctx, marks?: ControlMarks): Promise<ControlsApplied> {
  const controls = ctx.deps.controls;
  if (!controls) return {};
  const rec = current(ctx);
  const max = controls.maxTransferUsdc;
  if (max !== undefined && rec.amount > max) {
    const outcome = await finish(ctx, 'rejected', {
      error: {
        code: 'over_max_transfer',
        message: `amount ${formatUsdc(rec.amount)} is above the worker's MAX_TRANSFER_USDC (${formatUsdc(max)})`,
      },
    });
    return { outcome };
  }
  const verdict = await controls.check(rec.batchId, marks);
  if (verdict.wait !== undefined) throw new Later(1_000, verdict.wait, 'lock');
  if (verdict.refusal) return { outcome: await finish(ctx, 'rejected', { error: verdict.refusal }) };
  return { judged: verdict.judged === true };
}
