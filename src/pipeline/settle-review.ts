import { isEvmChain } from '../domain/chains.ts';
import { addEvidence, current, Later, saveStep, type Ctx } from './context.ts';
import { settleEvmReview } from './evm/evm-settle-review.ts';
import { settleReview } from './outcomes.ts';
import type { StepOutcome } from './pipeline-deps.ts';

/**
 * Settling doubt without a human, where the facts allow. A `needs_review` transfer whose payload is
 * past its deadline or expiry: the chain (EVM: the permit nonce still unused at a block past the
 * deadline) or the service's status route (Solana) may prove it never moved money — then it
 * becomes `failed` (and `retry` may send it) — or that it did. Otherwise it stays, evidence added.
 */
export async function settleNeedsReview(ctx: Ctx): Promise<StepOutcome> {
  const rec = current(ctx);
  const { steps } = rec;
  const settleAt = steps.settleAt ?? 0;
  if (!settleAt || steps.settled) return { kind: 'done', state: rec.state };
  if (ctx.now() < settleAt)
    throw new Later(
      settleAt - ctx.now(),
      `waiting for the payload's deadline to pass (settles from ${new Date(settleAt).toISOString()})`,
      'settle',
    );
  if (steps.permit && isEvmChain(rec.from) && ctx.deps.evm) {
    return await settleEvmReview({ ctx, evm: ctx.deps.evm, chain: rec.from }, steps.permit);
  }
  if (steps.solanaIntent) return await settleSolanaReview(ctx, steps.solanaIntent);
  await saveStep(ctx, { settled: true });
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
        error: { code: 'expired_unused', message: `intent ${intent} failed; safe to retry` },
      });
    } else {
      await addEvidence(ctx, `status route: intent ${intent} is ${st.status}`);
      if (['detected', 'minted', 'complete'].includes(st.status)) {
        // The service itself shows our intent moving: it was paid, under this intent.
        return await settleReview(ctx, 'submitted', {
          intentId: intent,
          intentStatus: st.status,
          error: null,
        });
      }
    }
  } catch (err) {
    await addEvidence(ctx, `status route unavailable: ${String((err as Error).message).slice(0, 120)}`);
  }
  await saveStep(ctx, { settled: true });
  return { kind: 'done', state: 'needs_review' };
}
