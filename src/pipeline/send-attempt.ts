import type { StepsPatch } from '../store/saved-steps.ts';
import type { AckVerdict } from '../store/replica-acks.ts';
import type { FencedSave, SaveFence } from '../store/transfer-store.ts';
import {
  addEvidence,
  current,
  estimateWritten,
  jittered,
  Later,
  noteWritten,
  saveStep,
  wait,
  type Ctx,
} from './context.ts';
import { saveHeld } from './held-save.ts';
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

/** What else must hold before a marked send goes: the EVM nonce lease still this transfer's. */
export type SendGate = { readonly confirm: () => Promise<boolean> };

/** The EVM nonce lease lapsed before its confirmation: nothing was sent (evm-flow.ts steps back). */
export class LeaseNotConfirmed extends Error {
  constructor() {
    super('the nonce lease was not confirmed');
    this.name = 'LeaseNotConfirmed';
  }
}

/**
 * Written durably before every send: on resume, `send_state=sending` means this send's outcome is
 * unknown. `attempts` (shown to operators) counts sends to the service across payloads. The mark
 * (with a fresh payload, in the same write) is made only while the run holds its transfer's lock,
 * and nothing is sent until the replicas REDIS_REPLICA_ACKS asks for hold it (docs/replicated-redis.md
 * ): a failover can then not bring back a record without the payload or its mark. When the
 * lock was lost the run stops (nothing written); when the replicas or the `gate` do not confirm in
 * time the mark is taken back and the transfer waits, nothing sent.
 */
export async function beginSend(
  ctx: Ctx,
  send: {
    readonly call: string;
    readonly idempotencyKey: string;
    readonly payload?: string;
    /** A new payload's saved fields, written with the mark of its first send. */
    readonly fresh?: StepsPatch | undefined;
    /** What else must hold before it goes (the EVM nonce lease). */
    readonly gate?: SendGate;
  },
): Promise<void> {
  const rec = current(ctx);
  const { steps } = rec;
  const fresh = send.fresh;
  const sends = fresh ? 1 : (steps.sends ?? 0) + 1;
  const held = send.gate?.confirm().catch(() => false);
  const mark: StepsPatch = {
    ...fresh,
    sendState: 'sending',
    sends,
    attempts: rec.attempts + 1,
    waitReason: null,
  };
  const replicas = await markSending(ctx, mark);
  const gateOk = held === undefined || (await held);
  if (replicas.ok && gateOk) {
    ctx.report(
      'send',
      `${send.call}: send ${sends} of ${send.payload ?? (fresh ? 'a new payload' : 'the same payload')}, Idempotency-Key ${send.idempotencyKey}`,
    );
    return;
  }
  // It never left: take the mark back (a crash or failover before this write leaves it marked as
  // possibly sent, the careful side).
  const reason = replicas.ok ? '' : replicas.reason;
  const site = ctx.deps.acks?.lastSite()?.primary;
  const back: StepsPatch = {
    sendState: 'idle',
    sends: fresh ? 0 : (steps.sends ?? 0),
    attempts: rec.attempts,
    // Saved unsent again, here (pipeline/evm/permit-discard.ts): read before this write.
    unsentSite: site ? site : null,
    ...(steps.prepared && fresh?.prepared === false ? { prepared: true } : {}),
    ...(reason ? { waitReason: reason } : {}),
  };
  carry(ctx, await ctx.deps.store.saveFenced(ctx.batchId, ctx.transferId, back, fenceOf(ctx)));
  estimateWritten(ctx);
  if (!gateOk) throw new LeaseNotConfirmed();
  ctx.report('wait', `${reason}: nothing sent`);
  throw new Later(jittered(ctx, 1_000), reason, 'replicas');
}

/**
 * What fences a send's saves (transfer-store.ts SaveFence): the run's lock token, the record it
 * carries, and its fee estimate while no write carried it yet (saving it again is harmless).
 */
function fenceOf(ctx: Ctx): SaveFence {
  return { token: lockToken(ctx), carried: current(ctx), estimate: ctx.run?.estimate };
}

function lockToken(ctx: Ctx): string {
  if (!ctx.lock) throw new Error("a send needs the run to hold its transfer's processing lock");
  return ctx.lock.token;
}

/**
 * A fenced save's outcome: the run stops when it no longer held its lock (nothing written), and
 * otherwise carries the record the save returned.
 */
function carry(ctx: Ctx, saved: FencedSave): void {
  if (!saved.held) lockLost(ctx);
  if (ctx.run && saved.record) ctx.run.rec = saved.record;
}

/**
 * Writes the mark while this run holds its transfer's lock, and waits until the replicas
 * REDIS_REPLICA_ACKS asks for hold it (on a standalone Redis nothing is waited for). A run that lost
 * the lock stops here, writing nothing: another run has the transfer now.
 */
async function markSending(ctx: Ctx, mark: StepsPatch): Promise<AckVerdict> {
  // A round cut off before its answer may have written the mark: the run carries it as written
  // (the careful side), and it is taken back.
  const { verdict, answered } = await saveHeld(ctx, mark, fenceOf(ctx), lockLost);
  if (answered) estimateWritten(ctx);
  return verdict;
}

function lockLost(ctx: Ctx): never {
  ctx.log.warn('this run lost its processing lock before sending: it stops, sending nothing');
  ctx.report('wait', 'lost the processing lock (another run has the transfer): nothing sent');
  throw new Later(jittered(ctx, 1_000), 'another run holds this transfer now', 'lock');
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
    await saveStep(ctx, { sendState: 'idle', uncertain: true });
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
  key_reused:
    'the service knows this Idempotency-Key from another payload: an earlier payload of this transfer reached it and may have paid; needs review',
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
  const { steps } = current(ctx);
  const dump = failureDump(f);
  await addEvidence(
    ctx,
    `send ${steps.sends ?? '?'} failed: ${describeFailure(f)}${dump ? ` (the runtime said: ${dump})` : ''}`,
  );
  let ambiguousAnswers = 0;
  let unavailableAnswers = 0;
  if (f.kind === 'ambiguous') {
    ambiguousAnswers = await store.incr(ctx.batchId, ctx.transferId, 'ambiguous');
    noteWritten(ctx, { patch: { ambiguous: ambiguousAnswers } });
  }
  if (f.kind === 'unavailable') {
    unavailableAnswers = await store.incr(ctx.batchId, ctx.transferId, 'unavailable');
    noteWritten(ctx, { patch: { unavailable: unavailableAnswers } });
  }
  await saveStep(
    ctx,
    f.kind === 'ambiguous' ? { sendState: 'idle', uncertain: true } : { sendState: 'idle' },
  );
  if (f.kind === 'rate_limited') await ctx.deps.hooks?.onRateLimited?.(f.retryAfterMs ?? 1_000);
  return {
    kind: f.kind,
    retryAfterMs: f.retryAfterMs,
    uncertainBefore: steps.uncertain,
    ambiguousAnswers,
    unavailableAnswers,
    pastDeadline: pastDeadline(ctx),
    keyReused: isKeyReused(f),
  };
}

/** The service's code for an `Idempotency-Key` it saw before with another body. */
function isKeyReused(f: ServiceFailure): boolean {
  return f.serviceCode?.toLowerCase() === 'idempotency_key_reused';
}
