import { feeCapBreach, feeGuardLine } from '../domain/fee-cap.ts';
import { bpsOf, formatUsdc } from '../domain/money.ts';
import { withEstimate } from '../store/transfer-store.ts';
import { current, saveStep, type Ctx } from './context.ts';
import { asServiceFailure, describeFailure } from './failure.ts';
import { finish, transientOrFinal } from './outcomes.ts';
import type { StepOutcome } from './pipeline-deps.ts';

/**
 * Estimates the fee (again after `retry`) and rejects a transfer whose fee is over a cap: how the
 * run ended, or undefined to go on (the estimate saved and carried).
 */
export async function estimateAndGuard(ctx: Ctx): Promise<StepOutcome | undefined> {
  const { config, store, service } = ctx.deps;
  const rec = current(ctx);
  const { reestimate } = rec.steps;
  let fee = rec.feeTotal;
  // The estimate's line names the fee; the guard's then need not again.
  let estimated = false;
  // `retry` asks for a fresh estimate: fees move, and the guard must judge today's fee.
  if (fee === null || reestimate) {
    ctx.report(
      'estimate',
      `asking the service for the fee of ${formatUsdc(rec.amount)} USDC ${rec.from}→${rec.to}`,
      true,
    );
    try {
      const est = await service.estimate({ from: rec.from, to: rec.to, amount: rec.amount });
      ctx.report(
        'estimate',
        `fee ${formatUsdc(est.fee.total)} USDC (platform ${formatUsdc(est.fee.platform)}, gas ${formatUsdc(est.fee.gas)}), net ${formatUsdc(est.netReceive)} USDC, ${bpsOf(est.fee.total, rec.amount)} bps (MAX_FEE_BPS ${config.maxFeeBps})`,
      );
      // Saved with the mark of the first send, or before the run moves the transfer or waits
      // (context.ts saveEstimateNow): one write fewer on the way to a send.
      if (ctx.run) {
        ctx.run.rec = withEstimate(ctx.run.rec, est);
        ctx.run.estimate = est;
      } else await store.saveEstimate(ctx.batchId, ctx.transferId, est);
      if (reestimate) await saveStep(ctx, { reestimate: false });
      fee = est.fee.total;
      estimated = true;
    } catch (err) {
      const f = asServiceFailure(err);
      if (!f) throw err;
      if (f.kind === 'rejected') {
        return await finish(ctx, 'failed', {
          error: {
            code: 'estimate_refused',
            message: `the service refused the estimate: ${describeFailure(f)}`,
          },
        });
      }
      // Estimating is safe to repeat: wait and try again, within the transient deadline.
      return await transientOrFinal(ctx, f, 'estimate');
    }
  }
  const breach = feeCapBreach(fee, rec.amount, config);
  ctx.report('guard', feeGuardLine(estimated ? undefined : formatUsdc(fee), breach));
  if (breach?.cap === 'bps') {
    return await finish(ctx, 'rejected', {
      error: {
        code: 'fee_too_high',
        message: `estimated fee ${formatUsdc(fee)} USDC is ${breach.bps} bps of ${formatUsdc(rec.amount)}, over MAX_FEE_BPS ${breach.maxFeeBps}`,
      },
    });
  }
  if (breach?.cap === 'usdc') {
    return await finish(ctx, 'rejected', {
      error: {
        code: 'fee_too_high',
        message: `estimated fee ${formatUsdc(fee)} USDC is over MAX_FEE_USDC ${formatUsdc(breach.maxFeeUsdc)}`,
      },
    });
  }
  return undefined;
}
