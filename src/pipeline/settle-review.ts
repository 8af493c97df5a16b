import { isEvmChain } from '../domain/chains.ts';
import type { TransferRecord } from '../store/transfer-record.ts';
import { Later, type Ctx } from './context.ts';
import { settleEvmReview } from './evm/evm-settle-review.ts';
import { addEvidence } from './evidence.ts';
import { settleReview } from './outcomes.ts';
import type { StepOutcome } from './pipeline-deps.ts';
import { savedSteps } from '../store/saved-steps.ts';

/**
 * Settling doubt without a human, where the facts allow. A `needs_review` transfer whose payload is
 * past its deadline or expiry: the chain (EVM: the permit nonce still unused at a block past the
 * deadline) or the service's status route (Solana) may prove it never moved money — then it
 * becomes `failed` (and `retry` may send it) — or that it did. Otherwise it stays, evidence added.
 */
export async function settleNeedsReview(ctx: Ctx, rec: TransferRecord): Promise<StepOutcome> {
  const steps = savedSteps(rec);
  const settleAt = steps.settleAt ?? 0;
  if (!settleAt || steps.settled) return { kind: 'done', state: rec.state };
  if (ctx.now() < settleAt)
    throw new Later(
      settleAt - ctx.now(),
      `waiting for the payload's deadline to pass (settles from ${new Date(settleAt).toISOString()})`,
      'settle',
    );
  if (steps.permit && isEvmChain(rec.from) && ctx.deps.evm) {
    return await settleEvmReview(ctx, ctx.deps.evm, rec.from, steps.permit);
  }
  if (steps.solanaIntent) return await settleSolanaReview(ctx, steps.solanaIntent);
  await ctx.deps.store.save(ctx.batchId, ctx.transferId, { settled: 1 });
  return { kind: 'done', state: 'needs_review' };
}

/** After its expiry, the status route shows whether a Solana intent moved money. */
async function settleSolanaReview(ctx: Ctx, intent: string): Promise<StepOutcome> {
  try {
    const st = await ctx.deps.service.getIntentStatus(intent);
    if (st === undefined) {
      await addEvidence(ctx, `status route does not know intent ${intent}`);
    } else if (st.status === 'failed') {
      await addEvidence(ctx, `status route: intent ${intent} failed after its expiry`);
      return await settleReview(ctx, 'failed', {
        error_code: 'expired_unused',
        error_message: `intent ${intent} failed; safe to retry`,
      });
    } else {
      await addEvidence(ctx, `status route: intent ${intent} is ${st.status}`);
      if (['detected', 'minted', 'complete'].includes(st.status)) {
        // The service itself shows our intent moving: it was paid, under this intent.
        return await settleReview(ctx, 'submitted', {
          intent_id: intent,
          intent_status: st.status,
          error_code: '',
          error_message: '',
        });
      }
    }
  } catch (err) {
    await addEvidence(ctx, `status route unavailable: ${String((err as Error).message).slice(0, 120)}`);
  }
  await ctx.deps.store.save(ctx.batchId, ctx.transferId, { settled: 1 });
  return { kind: 'done', state: 'needs_review' };
}
