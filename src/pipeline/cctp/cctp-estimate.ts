import { CCTP_DOMAIN, cctpFeeFor, finalityThresholdOf } from '../../domain/cctp.ts';
import { feeBpsFor } from '../../domain/cctp-answers.ts';
import { isEvmChain } from '../../domain/chains.ts';
import { feeCapBreach, feeGuardLine } from '../../domain/fee-cap.ts';
import { formatUsdc } from '../../domain/money.ts';
import type { TransferRoad } from '../../domain/roads.ts';
import { withEstimate } from '../../store/transfer-store.ts';
import { current, Later, saveStep, type Ctx } from '../context.ts';
import { finish, waitQueued } from '../outcomes.ts';
import type { StepOutcome } from '../pipeline-deps.ts';

/*
 * The CCTP road's estimate and fee guard (docs/cctp.md "The flow", steps 1–2 of PRODUCT §9): the fee
 * for the road's finality from Circle's fee route, judged by MAX_FEE_BPS and MAX_FEE_USDC as the
 * service's fee is; the burn's `maxFee` is that fee (saved, so the burn is the same call after a
 * crash). The fee shows as the transfer's fee (platform: Circle's; gas: 0, the gas being native).
 */

/** The finality threshold of a CCTP road. */
export function thresholdOf(via: Exclude<TransferRoad, 'service'>): number {
  return finalityThresholdOf(via === 'cctp-fast' ? 'fast' : 'standard');
}

/** Estimates and guards; undefined to go on (the maxFee saved), or how the run ended. */
export async function cctpEstimateAndGuard(ctx: Ctx): Promise<StepOutcome | undefined> {
  const rec = current(ctx);
  if (rec.via === 'service') throw new Error('cctpEstimateAndGuard on the service road');
  const { from, to } = rec;
  // Refused at enqueue already (a SOLANA row in a CCTP batch); defensive here.
  if (!isEvmChain(from) || !isEvmChain(to)) return await notEvm(ctx);
  const cctp = ctx.deps.cctp;
  if (!cctp) throw new Later(5_000, 'this worker has no EVM key', 'no_key');
  let fee = rec.cctp.maxFee;
  // A fresh estimate's line names the fee; the guard's then need not again.
  const estimated = fee === null || rec.steps.reestimate;
  if (fee === null || rec.steps.reestimate) {
    const threshold = thresholdOf(rec.via);
    ctx.report('estimate', `asking Circle's fee route for ${from}→${to} at finality ${threshold}`, true);
    const res = await cctp.api.fees(CCTP_DOMAIN[from], CCTP_DOMAIN[to]);
    if (res.kind === 'paused') {
      // Nothing is begun yet: the transfer waits queued, the reason shown (a cancel may take it).
      const reason = `CCTP API paused after a 429 (${Math.ceil(res.ms / 1000)} s left): nobody asks until then`;
      return await waitQueued(ctx, reason, Math.min(res.ms, 5_000), 'rate_limit');
    }
    if (res.kind !== 'ok') {
      const why = res.kind === 'not-found' ? 'the fee route answered 404' : res.problem;
      throw new Later(5_000, `CCTP fee route: ${why}; asking again`, 'retry');
    }
    const bps = feeBpsFor(res.value, threshold);
    if (bps === undefined) {
      return await finish(ctx, 'rejected', {
        error: {
          code: 'cctp_unavailable',
          message: `Circle quotes no fee for finality ${threshold} on ${from}→${to}`,
        },
      });
    }
    fee = cctpFeeFor(rec.amount, bps);
    ctx.report(
      'estimate',
      `fee ${formatUsdc(fee)} USDC (${bps} bps at finality ${threshold}), net ${formatUsdc(rec.amount - fee)} USDC`,
    );
    const est = { fee: { total: fee, platform: fee, gas: 0n }, netReceive: rec.amount - fee };
    await saveStep(ctx, { cctp: { maxFee: fee }, ...(rec.steps.reestimate ? { reestimate: false } : {}) });
    if (ctx.run) {
      ctx.run.rec = withEstimate(ctx.run.rec, est);
      ctx.run.estimate = est;
    }
  }
  const breach = feeCapBreach(fee, rec.amount, ctx.deps.config);
  ctx.report('guard', feeGuardLine(estimated ? undefined : formatUsdc(fee), breach));
  if (!breach) return undefined;
  const why =
    breach.cap === 'bps'
      ? `is ${breach.bps} bps of ${formatUsdc(rec.amount)}, over MAX_FEE_BPS ${breach.maxFeeBps}`
      : `is over MAX_FEE_USDC ${formatUsdc(breach.maxFeeUsdc)}`;
  return await finish(ctx, 'rejected', {
    error: { code: 'fee_too_high', message: `CCTP fee ${formatUsdc(fee)} USDC ${why}` },
  });
}

/** A row that is not EVM to EVM on the CCTP road. */
export async function notEvm(ctx: Ctx): Promise<StepOutcome> {
  const { from, to } = current(ctx);
  return await finish(ctx, 'failed', {
    error: {
      code: 'cctp_route_unsupported',
      message: `the CCTP road is EVM to EVM only, not ${from}→${to}: Solana stays on the service`,
    },
  });
}
