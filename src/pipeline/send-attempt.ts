import { savedSteps, type TransferPatch } from '../store/saved-steps.ts';
import type { TransferRecord } from '../store/transfer-record.ts';
import { loadRecord, wait, type Ctx } from './context.ts';
import { addEvidence } from './evidence.ts';
import { asServiceFailure, describeFailure, failureDump, type ServiceFailure } from './failure.ts';
import { pastDeadline } from './outcomes.ts';
import {
  decideAfterFailure,
  type AfterSend,
  type ResendPause,
  type SendFailureFacts,
} from './failure-decision.ts';
import { backoffMs } from './policy.ts';

/*
 * One send of a saved payload (a signed permit or Solana transaction), shared by both flows: the
 * durable mark before it, and what is recorded and decided (failure-decision.ts) after it fails.
 */

/**
 * Written durably before every send: on resume, `send_state=sending` means this send's outcome is
 * unknown. `attempts` (shown to operators) counts sends to the service across payloads.
 */
export async function beginSend(
  ctx: Ctx,
  rec: TransferRecord,
  send: { readonly call: string; readonly idempotencyKey: string; readonly payload?: string },
  freshPayload?: TransferPatch,
): Promise<void> {
  const sends = freshPayload ? 1 : (savedSteps(rec).sends ?? 0) + 1;
  await ctx.deps.store.save(ctx.batchId, ctx.transferId, {
    ...freshPayload,
    send_state: 'sending',
    sends,
    attempts: rec.attempts + 1,
  });
  ctx.report(
    'send',
    `${send.call}: send ${sends} of ${send.payload ?? (freshPayload ? 'a new payload' : 'the same payload')}, Idempotency-Key ${send.idempotencyKey}`,
  );
}

/**
 * The one decision after a failed send of a saved payload, from the client's classification and
 * the payload's history (failure-decision.ts). Waits (in the job, holding the payload) before a
 * re-send.
 */
export async function afterFailedSend(
  ctx: Ctx,
  err: unknown,
): Promise<{ after: AfterSend; f: ServiceFailure }> {
  const f = asServiceFailure(err);
  if (!f) {
    // An unexpected local error after the request may have gone out: treat as uncertain.
    await ctx.deps.store.save(ctx.batchId, ctx.transferId, { send_state: '', uncertain: 1 });
    throw err;
  }
  const decision = decideAfterFailure(await recordFailedSend(ctx, f), ctx.policy);
  const pauseMs = decision.after === 'resend' ? pauseOf(ctx, decision.pause) : undefined;
  const pause = pauseMs === undefined ? '' : ` in ${(pauseMs / 1000).toFixed(1)} s`;
  ctx.report('answer', `${f.kind}: ${AFTER_SEND_MEANS[decision.after]}${pause}`);
  if (pauseMs !== undefined) await wait(ctx, pauseMs);
  return { after: decision.after, f };
}

/** What each decision means, for the job's log. */
const AFTER_SEND_MEANS: Record<AfterSend, string> = {
  resend: 're-sending the same payload',
  refused_first: 'refused on its first send: it moved no money',
  give_up_unprocessed: 'giving up: the service never processed it, nothing was paid',
  needs_review: 'its outcome is unknown (a send may have been processed): needs review',
};

function pauseOf(ctx: Ctx, pause: ResendPause): number {
  return 'ms' in pause ? pause.ms : backoffMs(ctx.policy, pause.backoffAttempt, ctx.deps.random);
}

/**
 * Records the failed send's answer in the transfer (evidence, the send no longer in flight, an
 * ambiguous answer making the payload uncertain, the answer counted) and returns the facts the
 * decision is made from.
 */
async function recordFailedSend(ctx: Ctx, f: ServiceFailure): Promise<SendFailureFacts> {
  const { store } = ctx.deps;
  const rec = await loadRecord(ctx);
  const steps = savedSteps(rec);
  const dump = failureDump(f);
  await addEvidence(
    ctx,
    `send ${steps.sends ?? '?'} failed: ${describeFailure(f)}${dump ? ` (the runtime said: ${dump})` : ''}`,
  );
  let ambiguousAnswers = 0;
  let unavailableAnswers = 0;
  if (f.kind === 'ambiguous') ambiguousAnswers = await store.incr(ctx.batchId, ctx.transferId, 'ambiguous');
  if (f.kind === 'unavailable')
    unavailableAnswers = await store.incr(ctx.batchId, ctx.transferId, 'unavailable');
  await store.save(
    ctx.batchId,
    ctx.transferId,
    f.kind === 'ambiguous' ? { send_state: '', uncertain: 1 } : { send_state: '' },
  );
  if (f.kind === 'rate_limited') await ctx.deps.hooks?.onRateLimited?.(f.retryAfterMs ?? 1_000);
  return {
    kind: f.kind,
    retryAfterMs: f.retryAfterMs,
    uncertainBefore: steps.uncertain,
    ambiguousAnswers,
    unavailableAnswers,
    pastDeadline: pastDeadline(ctx, rec),
  };
}
