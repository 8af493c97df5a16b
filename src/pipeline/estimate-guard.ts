import { feeCapBreach } from '../domain/fee-cap.ts';
import { bpsOf, formatUsdc } from '../domain/money.ts';
import type { TransferRecord } from '../store/transfer-record.ts';
import { saveStep, type Ctx } from './context.ts';
import { asServiceFailure, describeFailure } from './failure.ts';
import { finish, transientOrFinal } from './outcomes.ts';
import type { StepOutcome } from './pipeline-deps.ts';
import { savedSteps } from '../store/saved-steps.ts';
import { withEstimate } from '../store/transfer-store.ts';

/**
 * Estimates the fee (again after `retry`) and rejects a transfer whose fee is over a cap: how the
 * run ended (`out`), or the record with the estimate saved (`rec`) to go on from.
 */
export async function estimateAndGuard(
  ctx: Ctx,
  rec: TransferRecord,
): Promise<{ readonly out: StepOutcome } | { readonly rec: TransferRecord }> {
  const { config, store, service } = ctx.deps;
  const { reestimate } = savedSteps(rec);
  let fee = rec.feeTotal;
  // `retry` asks for a fresh estimate: fees move, and the guard must judge today's fee.
  if (fee === null || reestimate) {
    ctx.report(
      'estimate',
      `asking the service for the fee of ${formatUsdc(rec.amount)} USDC ${rec.from}→${rec.to}`,
    );
    try {
      const est = await service.estimate({ from: rec.from, to: rec.to, amount: rec.amount });
      ctx.report(
        'estimate',
        `fee ${formatUsdc(est.fee.total)} USDC (platform ${formatUsdc(est.fee.platform)}, gas ${formatUsdc(est.fee.gas)}), net ${formatUsdc(est.netReceive)} USDC, ${bpsOf(est.fee.total, rec.amount)} bps (MAX_FEE_BPS ${config.maxFeeBps})`,
      );
      await store.saveEstimate(ctx.batchId, ctx.transferId, est.fee, est.netReceive);
      rec = withEstimate(rec, est.fee, est.netReceive);
      if (reestimate) rec = await saveStep(ctx, rec, { reestimate: '' });
      fee = est.fee.total;
    } catch (err) {
      const f = asServiceFailure(err);
      if (!f) throw err;
      if (f.kind === 'rejected') {
        return {
          out: await finish(ctx, 'failed', {
            error_code: 'estimate_refused',
            error_message: `the service refused the estimate: ${describeFailure(f)}`,
          }),
        };
      }
      // Estimating is safe to repeat: wait and try again, within the transient deadline.
      return { out: await transientOrFinal(ctx, rec, f, 'estimate') };
    }
  }
  ctx.report('guard', `checking the fee of ${formatUsdc(fee)} USDC against MAX_FEE_BPS and MAX_FEE_USDC`);
  const breach = feeCapBreach(fee, rec.amount, config);
  if (breach?.cap === 'bps') {
    return {
      out: await finish(ctx, 'rejected', {
        error_code: 'fee_too_high',
        error_message: `estimated fee ${formatUsdc(fee)} USDC is ${breach.bps} bps of ${formatUsdc(rec.amount)}, over MAX_FEE_BPS ${breach.maxFeeBps}`,
      }),
    };
  }
  if (breach?.cap === 'usdc') {
    return {
      out: await finish(ctx, 'rejected', {
        error_code: 'fee_too_high',
        error_message: `estimated fee ${formatUsdc(fee)} USDC is over MAX_FEE_USDC ${formatUsdc(breach.maxFeeUsdc)}`,
      }),
    };
  }
  return { rec };
}
