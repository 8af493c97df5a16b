import type { TransferRecord } from '../store/transfer-record.ts';
import { loadRecord, wait, type Ctx } from './context.ts';
import { addEvidence } from './evidence.ts';
import { asServiceFailure, describeFailure, failureDump, type ServiceFailure } from './failure.ts';
import { pastDeadline } from './outcomes.ts';
import { backoffMs } from './policy.ts';

/*
 * One send of a saved payload (a signed permit or Solana transaction), shared by both flows: the
 * durable mark before it, and the one decision after it fails.
 */

/**
 * Written durably before every send: on resume, `send_state=sending` means this send's outcome is
 * unknown. `attempts` (shown to operators) counts sends to the service across payloads.
 */
export async function beginSend(
  ctx: Ctx,
  rec: TransferRecord,
  send: { readonly call: string; readonly idempotencyKey: string; readonly payload?: string },
  freshPayload?: Record<string, string | number>,
): Promise<void> {
  const sends = freshPayload ? 1 : Number(rec.raw['sends'] ?? 0) + 1;
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

export type AfterSend = 'resend' | 'refused_first' | 'give_up_unprocessed' | 'needs_review';

/**
 * The one decision after a failed send of a saved payload, from the client's classification and
 * the payload's history. Waits (in the job, holding the payload) before a re-send.
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
  return { after: await decideAfterFailedSend(ctx, f), f };
}

/** What each decision means, for the job's log. */
const AFTER_SEND_MEANS: Record<AfterSend, string> = {
  resend: 're-sending the same payload',
  refused_first: 'refused on its first send: it moved no money',
  give_up_unprocessed: 'giving up: the service never processed it, nothing was paid',
  needs_review: 'its outcome is unknown (a send may have been processed): needs review',
};

/** The decision, and for a re-send the pause before it. */
type Decision = { readonly after: AfterSend; readonly pauseMs?: number };

async function decideAfterFailedSend(ctx: Ctx, f: ServiceFailure): Promise<AfterSend> {
  const { after, pauseMs } = await decide(ctx, f);
  const pause = pauseMs === undefined ? '' : ` in ${(pauseMs / 1000).toFixed(1)} s`;
  ctx.report('answer', `${f.kind}: ${AFTER_SEND_MEANS[after]}${pause}`);
  if (pauseMs !== undefined) await wait(ctx, pauseMs);
  return after;
}

async function decide(ctx: Ctx, f: ServiceFailure): Promise<Decision> {
  const { store } = ctx.deps;
  const rec = await loadRecord(ctx);
  const uncertainBefore = rec.raw['uncertain'] === '1';
  const dump = failureDump(f);
  await addEvidence(
    ctx,
    `send ${rec.raw['sends'] ?? '?'} failed: ${describeFailure(f)}${dump ? ` (the runtime said: ${dump})` : ''}`,
  );
  switch (f.kind) {
    case 'rejected':
      await store.save(ctx.batchId, ctx.transferId, { send_state: '' });
      return { after: uncertainBefore ? 'needs_review' : 'refused_first' };
    case 'ambiguous': {
      const n = await store.incr(ctx.batchId, ctx.transferId, 'ambiguous');
      await store.save(ctx.batchId, ctx.transferId, { send_state: '', uncertain: 1 });
      if (n > ctx.policy.maxAmbiguousResends || pastDeadline(ctx, rec)) return { after: 'needs_review' };
      return { after: 'resend', pauseMs: backoffMs(ctx.policy, n, ctx.deps.random) };
    }
    case 'rate_limited': {
      await store.save(ctx.batchId, ctx.transferId, { send_state: '' });
      const ms = f.retryAfterMs ?? 1_000;
      await ctx.deps.hooks?.onRateLimited?.(ms);
      if (pastDeadline(ctx, rec)) return { after: uncertainBefore ? 'needs_review' : 'give_up_unprocessed' };
      return { after: 'resend', pauseMs: Math.min(ms, ctx.policy.backoffMaxMs) };
    }
    case 'unavailable': {
      const n = await store.incr(ctx.batchId, ctx.transferId, 'unavailable');
      await store.save(ctx.batchId, ctx.transferId, { send_state: '' });
      if (n >= ctx.policy.maxUnavailableSends || pastDeadline(ctx, rec)) {
        return { after: uncertainBefore ? 'needs_review' : 'give_up_unprocessed' };
      }
      return { after: 'resend', pauseMs: backoffMs(ctx.policy, n, ctx.deps.random) };
    }
  }
}
