import type { ListHit } from '../config/screening/screening-lists.ts';
import { current, type Ctx } from './context.ts';
import { finish, waitQueued } from './outcomes.ts';
import type { ScreeningRefusal, StepOutcome } from './pipeline-deps.ts';

/*
 * The last look at a transfer's recipient before anything is signed for it (docs/promises.md,
 * promise 6; docs/screening.md): a list may have grown since the row was enqueued. The decision is
 * pure, over what is known (`decideScreening`); `enforceScreening` gathers the facts and acts.
 * Checks of other kinds (USDC's own controls, read on chain) are facts of the same decision.
 */

/** What screening knows of a transfer before signing. */
export type ScreeningFacts = {
  readonly recipient: string;
  /** The list in force naming the recipient; undefined when none does. */
  readonly listed: ListHit | undefined;
  /** Why screening is stale now (a list older than SCREENING_MAX_AGE); undefined when fresh. */
  readonly stale: string | undefined;
};

export type ScreeningDecision =
  | { readonly act: 'go' }
  | { readonly act: 'wait'; readonly reason: string }
  | { readonly act: 'reject'; readonly refusal: ScreeningRefusal };

/**
 * A listed recipient is rejected — even while screening is stale: an old list that names it is
 * reason enough; otherwise a stale list lets nothing be signed: the transfer waits.
 */
export function decideScreening(facts: ScreeningFacts): ScreeningDecision {
  if (facts.listed) {
    const { list, date } = facts.listed;
    return {
      act: 'reject',
      refusal: {
        check: 'list',
        code: 'recipient_sanctioned',
        who: `list:${list}`,
        message: `recipient ${facts.recipient} is on the sanctions list ${list} of ${date}`,
      },
    };
  }
  if (facts.stale !== undefined) return { act: 'wait', reason: facts.stale };
  return { act: 'go' };
}

/** How long a transfer waits for a fresh list before it looks again. */
const STALE_RECHECK_MS = 5_000;

/**
 * Screens the transfer's recipient before its first payload is made: `rejected`
 * (`recipient_sanctioned`, nothing signed, nothing paid) when a list in force names it; `queued`
 * with the reason while screening is stale. Returns the outcome when it ended the transfer,
 * undefined when the run goes on.
 */
export async function enforceScreening(ctx: Ctx): Promise<StepOutcome | undefined> {
  const gate = ctx.deps.screening;
  if (!gate) return undefined;
  const rec = current(ctx);
  const decision = decideScreening({
    recipient: rec.recipient,
    listed: gate.lookup(rec.recipient),
    stale: gate.staleReason(ctx.now()),
  });
  if (decision.act === 'go') return undefined;
  if (decision.act === 'wait') return await waitQueued(ctx, decision.reason, STALE_RECHECK_MS, 'screening');
  const { refusal } = decision;
  await gate.refused(ctx.batchId, ctx.transferId, refusal);
  ctx.log.warn({ check: refusal.check, who: refusal.who }, 'transfer refused by screening before signing');
  return await finish(ctx, 'rejected', { error: { code: refusal.code, message: refusal.message } });
}
