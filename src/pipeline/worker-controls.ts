import { formatUsdc } from '../domain/money.ts';
import { current, Later, type Ctx } from './context.ts';
import { finish } from './outcomes.ts';
import type { StepOutcome } from './pipeline-deps.ts';

/**
 * Controls hold wherever a batch comes from (docs/promises.md, promise 5): before a transfer's first
 * payload is made, the worker — the one process that signs — applies the controls it is configured
 * with, whatever the enqueuing process had. The batch-wide judgement (the approval threshold,
 * APPROVALS_REQUIRED, the new-recipient policy and cap, MAX_BATCH_USDC) is made once per batch and
 * set of controls by `check` (src/worker/batch-controls.ts), which holds the batch when those
 * controls would have; the hold then keeps this transfer unsigned (recipient-check.ts) until
 * `approve` releases it.
 */
export type WorkerControls = {
  /** This worker's MAX_TRANSFER_USDC (micro-USDC). */
  readonly maxTransferUsdc: bigint | undefined;
  /** Judges the batch under this worker's controls (holding it when they would); a refusal of all its rows. */
  check(batchId: string): Promise<ControlsVerdict>;
};

export type ControlsVerdict = {
  readonly refusal?: { readonly code: string; readonly message: string };
  /** Not judged yet: why the transfer waits (its batch is still being enqueued). */
  readonly wait?: string;
};

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
