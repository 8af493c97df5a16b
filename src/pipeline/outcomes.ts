import type { TransferState } from '../domain/transfer.ts';
import { describeFailure, type ServiceFailure } from './failure.ts';
import { current, Later, moveStep, saveEstimateNow, saveStep, type Ctx } from './context.ts';
import { withEvidence } from '../store/transfer-evidence.ts';
import { backoffMs } from './policy.ts';
import type { StepOutcome, WaitKind } from './pipeline-deps.ts';
import { SUBMITTED_CLEARED, type StepsPatch } from '../store/saved-steps.ts';
import type { TransferRecord } from '../store/transfer-record.ts';
import type { TransitionChange, TransitionResult } from '../store/transfer-store.ts';

/*
 * How a run ends: a final state (finish, submitted, needsReview), or back to `queued` to run again
 * later (moveBackToQueued, waitQueued, transientOrFinal). Every one of them is a transition of the
 * store, laid over the record the run carries.
 */

export async function finish(ctx: Ctx, to: TransferState, fields: StepsPatch): Promise<StepOutcome> {
  const unpaid = to === 'failed' || to === 'rejected';
  if (unpaid && ctx.deps.spendLimit) fields = { ...fields, spendReserved: false };
  const carried = ctx.run?.rec;
  // The decision, with its reason, is the evidence's last line, written in the transition that
  // makes it final: whoever reads the final state reads why.
  const evidence =
    to !== 'submitted' && ctx.run
      ? withEvidence(ctx.run.rec.evidence, ctx.now(), decisionLine(to, fields))
      : undefined;
  const clear: StepsPatch = to === 'submitted' ? SUBMITTED_CLEARED : { waitReason: null };
  const res = await finalTransition(ctx, {
    expected: ['in_progress', 'queued'],
    to,
    fields: { ...clear, ...fields, ...(evidence ? { evidence } : {}) },
  });
  if (!res.ok) return { kind: 'done', state: res.current ?? to };
  // Nothing was sent: the daily cap's room and the owner's balance go back, once the fenced move
  // made it final (a run whose lock lapsed frees nothing another run may be paying with).
  if (unpaid) await releaseUnpaid(ctx, carried);
  // The record the run carries, the transition laid over it as the store wrote it (while this run
  // held the transfer's lock): an operator's command landing after it cannot change what the job
  // reports.
  return { kind: 'done', state: to, record: ctx.run?.rec ?? res.record, ended: true };
}

/** `failed: refused: the service refused …`: the state, the error's code and message. */
function decisionLine(to: TransferState, fields: StepsPatch): string {
  const error = fields.error;
  return [to, error?.code, error?.message].filter((p) => p !== undefined && p !== '').join(': ');
}

/**
 * The transition that makes the transfer final. It frees the run's processing lock in its own step
 * (one script less per run: whoever takes the lock next finds the transfer final); once it is made,
 * the final state is logged and a batch it completed is announced.
 */
async function finalTransition(
  ctx: Ctx,
  change: TransitionChange & { readonly fields: StepsPatch },
): Promise<TransitionResult> {
  await saveEstimateNow(ctx);
  const res = await moveStep(ctx, { ...change, ...(ctx.lock ? { unlock: ctx.lock.token } : {}) });
  if (!res.ok) return res;
  if (ctx.lock) ctx.lock.released = true;
  logFinal(ctx, change.to, change.fields);
  if (res.completedGeneration !== null) {
    await ctx.deps.hooks?.onBatchCompleted?.(ctx.batchId, res.completedGeneration);
  }
  return res;
}

/**
 * A transfer made final: `submitted` at info; `failed`, `rejected` and `needs_review` at warn,
 * with its code and message (the log's context names the batch and transfer).
 */
function logFinal(ctx: Ctx, to: TransferState, fields: StepsPatch): void {
  // ctx.log is the run's child logger: it adds the batchId and transferId to every line.
  const facts = { state: to };
  if (to === 'submitted') {
    ctx.log.info(facts, 'transfer final');
    return;
  }
  ctx.log.warn(
    { ...facts, code: fields.error?.code || undefined, reason: fields.error?.message || undefined },
    `transfer ${to}`,
  );
}

export async function submitted(
  ctx: Ctx,
  answer: { readonly intentId: string; readonly intentStatus: string } & StepsPatch,
): Promise<StepOutcome> {
  if (ctx.deps.spendLimit) {
    // Re-stamp the daily-cap reservation at the moment the payment was accepted.
    await ctx.deps.spendLimit.reserve(`${ctx.batchId}/${ctx.transferId}`, current(ctx).amount);
  }
  const out = await finish(ctx, 'submitted', answer);
  if (answer.intentId) await followSubmitted(ctx, answer.intentId);
  return out;
}

/**
 * Follows a submitted transfer's intent (PipelineHooks.onSubmitted), after the write that made it
 * submitted: awaited here, or, when the run's caller ends the job with a write of its own, sent now
 * and awaited with that one (Ctx.deferred: one round trip for both, the job ending after both).
 */
async function followSubmitted(ctx: Ctx, intentId: string): Promise<void> {
  const write = ctx.deps.hooks?.onSubmitted?.(ctx.batchId, ctx.transferId, intentId);
  if (!write) return;
  if (ctx.deferred) ctx.deferred.add(write);
  else await write;
}

export async function needsReview(
  ctx: Ctx,
  f: ServiceFailure,
  settleAt: number | null,
): Promise<StepOutcome> {
  const out = await finish(ctx, 'needs_review', {
    error: {
      code: 'outcome_unknown',
      message: `the service may have executed this payment but its answer was lost (${describeFailure(f)}); check the chain, then use resolve`,
    },
    ...(settleAt ? { settleAt } : {}),
  });
  await ctx.deps.hooks?.onNeedsReview?.(ctx.batchId, ctx.transferId, settleAt);
  return out;
}

/**
 * The service refused the send's `Idempotency-Key` as one it saw before with another payload: an
 * earlier payload of this transfer reached it, one this project's records no longer hold (its Redis
 * was emptied, or restored from an old backup: docs/operating.md "When Redis lost its data"). That
 * payload may have paid, so nothing new is signed: `needs_review`, which never settles by itself
 * (the earlier payload is not known here) and which `retry` never re-sends. The refused payload
 * itself moved nothing and is cleared (`dead`), so that `resolve` is not held back by it.
 */
export async function keyReusedReview(
  ctx: Ctx,
  f: ServiceFailure,
  send: { readonly key: string; readonly dead: StepsPatch },
): Promise<StepOutcome> {
  const out = await finish(ctx, 'needs_review', {
    ...send.dead,
    error: {
      code: 'idempotency_key_reused',
      message: `the service refused Idempotency-Key ${send.key} as used before with another payload (${describeFailure(f)}): an earlier payload of this transfer reached the service and may have paid; check the service and the chain, then use resolve`,
    },
  });
  await ctx.deps.hooks?.onNeedsReview?.(ctx.batchId, ctx.transferId, null);
  return out;
}

/** Nothing of this transfer will be paid: its daily-cap room and its owner's balance go back. */
async function releaseUnpaid(ctx: Ctx, rec: TransferRecord | undefined): Promise<void> {
  await ctx.deps.spendLimit?.release(`${ctx.batchId}/${ctx.transferId}`);
  await releaseOwnerBalance(ctx, rec);
}

/** Nothing of this transfer will be paid: its owner's reserved balance goes back. */
async function releaseOwnerBalance(ctx: Ctx, rec: TransferRecord | undefined): Promise<void> {
  const balances = ctx.deps.evm?.balances;
  if (balances && rec) await balances.releaseOf(rec);
}

/** A final transition out of `needs_review`, settled from the chain or the status route. */
export async function settleReview(
  ctx: Ctx,
  to: 'failed' | 'submitted',
  fields: StepsPatch,
): Promise<StepOutcome> {
  await saveStep(ctx, { settled: true });
  const res = await finalTransition(ctx, { expected: ['needs_review'], to, fields });
  if (!res.ok) return { kind: 'done', state: res.current ?? 'needs_review' };
  const record = ctx.run?.rec ?? res.record;
  if (to === 'failed') await releaseOwnerBalance(ctx, record);
  // Settled as paid: its intent is followed like any submitted one, so the batch can settle.
  const intentId = fields.intentId;
  if (to === 'submitted' && typeof intentId === 'string' && intentId) await followSubmitted(ctx, intentId);
  return { kind: 'done', state: to, record };
}

export function pastDeadline(ctx: Ctx): boolean {
  const first = current(ctx).steps.firstSeenAt ?? ctx.now();
  return ctx.now() - first >= ctx.policy.transientDeadlineMs;
}

export async function moveBackToQueued(ctx: Ctx, reason: string): Promise<void> {
  const fields = { waitReason: reason };
  await saveEstimateNow(ctx);
  await moveStep(ctx, { expected: ['in_progress'], to: 'queued', fields });
}

/**
 * Waits `queued` with the reason shown, for something that is not a failure (the daily cap, a held
 * nonce pool): the 3-minute clock of transient failures starts again when it goes.
 */
export async function waitQueued(ctx: Ctx, reason: string, delayMs: number, kind: WaitKind): Promise<never> {
  const fields = { waitReason: reason, firstSeenAt: null };
  await saveEstimateNow(ctx);
  await moveStep(ctx, { expected: ['in_progress'], to: 'queued', fields });
  throw new Later(delayMs, reason, kind);
}

/** A transient failure before any payload exists: wait, or fail once the deadline has passed. */
export async function transientOrFinal(ctx: Ctx, f: ServiceFailure, what: string): Promise<StepOutcome> {
  if (f.kind === 'rate_limited') await ctx.deps.hooks?.onRateLimited?.(f.retryAfterMs ?? 1_000);
  if (pastDeadline(ctx)) {
    return await finish(ctx, 'failed', {
      error: {
        code: 'service_unavailable',
        message: `${what} kept failing for ${Math.round(ctx.policy.transientDeadlineMs / 1000)} s: ${describeFailure(f)}`,
      },
    });
  }
  const delay =
    f.kind === 'rate_limited'
      ? (f.retryAfterMs ?? 1_000)
      : backoffMs(ctx.policy, current(ctx).attempts, ctx.deps.random);
  await saveStep(ctx, { lastError: describeFailure(f).slice(0, 300) });
  await moveBackToQueued(ctx, `${what} failed (${f.kind}); retrying`);
  throw new Later(
    delay,
    `${what} failed: ${describeFailure(f)}`,
    f.kind === 'rate_limited' ? 'rate_limit' : 'retry',
  );
}
