import { randomUUID } from 'node:crypto';
import { isEvmChain } from '../domain/chains.ts';
import { isFinalState } from '../domain/transfer.ts';
import { recordAfter, hasPayload, savedSteps } from '../store/saved-steps.ts';
import type { TransferRecord } from '../store/transfer-record.ts';
import { Later, NO_REPORT, type Ctx, type StepReporter } from './context.ts';
import { reserveDailySpend } from './daily-cap.ts';
import { holdUnlessCleared } from './recipient-check.ts';
import { estimateAndGuard } from './estimate-guard.ts';
import { evmFlow } from './evm/evm-flow.ts';
import { forgetResolvedPermit } from './evm/evm-settle-review.ts';
import { addEvidence } from './evidence.ts';
import { finish } from './outcomes.ts';
import type { PipelineDeps, StepOutcome } from './pipeline-deps.ts';
import { DEFAULT_POLICY } from './policy.ts';
import { settleNeedsReview } from './settle-review.ts';
import { solanaFlow } from './solana-flow.ts';

export type { PipelineDeps, PipelineHooks, PipelineMetrics, StepOutcome, WaitKind } from './pipeline-deps.ts';
export type { StepName, StepReporter } from './context.ts';

/**
 * One transfer's steps: estimate → fee guard → daily cap → (EVM, evm/evm-flow.ts) permit from the
 * nonce manager → transfer, or (SOLANA, solana-flow.ts) build-tx → policy check → sign → submit.
 * Every step's result is saved in the transfer record before the next step runs, so a crashed or
 * stalled job, run again, resumes from the saved steps: the queue delivers at least once; these
 * records are what make that safe.
 *
 * The money rules (docs/promises.md, promise 1), in terms of the saved fields:
 * - `sends` counts sends of the current payload *begun*; `send_state=sending` is written before
 *   each call, so a crash mid-call is seen on resume and counts as an uncertain send.
 * - `uncertain=1` once any send of the current payload may have been processed (an ambiguous answer,
 *   or a crash mid-send). From then on a refusal proves nothing: the transfer ends `needs_review`.
 * - A new payload (permit / built transaction) is made only while `uncertain` is 0 and the old one
 *   cannot execute: it was never sent, every send was refused, or it was never processed.
 */

// The processing lock outlives a healthy job's renewals by far, and a dead process's by ~30 s
// (like BullMQ's own job lock), so a crashed transfer resumes on another worker soon.
const LOCK_TTL_MS = 30_000;
const LOCK_RENEW_MS = 10_000;

export async function runTransfer(
  deps: PipelineDeps,
  batchId: string,
  transferId: string,
  signal: AbortSignal = new AbortController().signal,
  options: { settleOnly?: boolean; report?: StepReporter } = {},
): Promise<StepOutcome> {
  const lockLost = new AbortController();
  const token = randomUUID();
  const lock = { token, released: false };
  const ctx: Ctx = {
    deps,
    policy: deps.policy ?? DEFAULT_POLICY,
    now: deps.now ?? Date.now,
    signal: AbortSignal.any([signal, lockLost.signal]),
    log: deps.logger.child({ batchId, transferId }),
    report: options.report ?? NO_REPORT,
    batchId,
    transferId,
    lock,
  };
  // One job at a time per transfer, whatever queued it: two runs of one transfer at once could
  // each build and sign a payload. The queue's own lock is per job, so this one is per transfer.
  // The lock, the record and (unless only settling) a queued transfer made `in_progress`, in one
  // step: the run goes on from the record it returns, read once.
  const taken = await deps.store.take(
    batchId,
    transferId,
    { token, ttlMs: LOCK_TTL_MS },
    !options.settleOnly,
  );
  if (!taken.locked) {
    return { kind: 'later', delayMs: 1_000, reason: 'another job is processing this transfer', wait: 'lock' };
  }
  const renew = setInterval(() => {
    deps.store.relock(batchId, transferId, token, LOCK_TTL_MS).then(
      (ok) => {
        if (!ok) lockLost.abort();
      },
      () => {},
    );
  }, LOCK_RENEW_MS);
  try {
    const rec = taken.record;
    if (options.settleOnly) {
      if (!rec) return { kind: 'done', state: 'failed' };
      if (rec.state !== 'needs_review') {
        await forgetResolvedPermit(ctx, rec);
        return { kind: 'done', state: rec.state, record: rec };
      }
    }
    return await withRecord(ctx, await step(ctx, rec, taken.paused));
  } catch (err) {
    if (err instanceof Later) {
      return { kind: 'later', delayMs: err.delayMs, reason: err.reason, wait: err.kind };
    }
    throw err;
  } finally {
    clearInterval(renew);
    // A run that made its transfer final freed the lock in that transition (outcomes.ts).
    if (!lock.released) await deps.store.unlock(batchId, transferId, token).catch(() => {});
  }
}

/**
 * A run that ended without a transition of its own (the transfer was final already, taken by an
 * operator's command, or held for approval) reports the record as it found it, read while it still
 * holds the transfer's lock, with the state it decided on.
 */
async function withRecord(ctx: Ctx, out: StepOutcome): Promise<StepOutcome> {
  if (out.kind !== 'done' || out.record) return out;
  const rec = await ctx.deps.store.load(ctx.batchId, ctx.transferId);
  if (!rec) return out;
  const record = rec.state === out.state ? rec : recordAfter(rec, { state: out.state });
  return { ...out, record };
}

/**
 * The run's steps from the record as the take left it (`in_progress` once it moved a queued one).
 * That record is carried, with this run's own writes laid over it, rather than read again: while
 * the run holds the transfer's lock, no other run writes it, operators' commands move only
 * transfers that are not `in_progress` (cancel: queued; retry: failed; resolve: needs_review), and
 * the follower writes only submitted ones. Only a job the queue gave up on is finalized without
 * the lock (abandon.ts), and every transition of a run expects the state it left. Reads stay
 * where time passes before a decision (a permit prepared while waiting for the lease,
 * evm/evm-permit.ts; a send after the owner's choice, evm/evm-flow.ts) and where the record is
 * appended to (evidence).
 */
async function step(ctx: Ctx, taken: TransferRecord | undefined, paused: boolean): Promise<StepOutcome> {
  const { store } = ctx.deps;
  let rec = taken;
  if (!rec) {
    ctx.log.warn('job for a transfer that has no record; nothing to do');
    return { kind: 'done', state: 'failed' };
  }
  if (rec.state === 'needs_review') return await settleNeedsReview(ctx, rec);
  if (isFinalState(rec.state)) return { kind: 'done', state: rec.state, record: rec };
  if (paused) throw new Later(2_000, 'processing is paused (usdc-batch resume)', 'paused');

  // A crash between "sending" and the answer: that send may have been processed.
  if (savedSteps(rec).sendState === 'sending') {
    ctx.report('send', 'resuming after a send that was cut off (worker stopped before the answer)');
    await addEvidence(
      ctx,
      'a send was interrupted (worker stopped before the answer); its outcome is unknown',
    );
    await store.save(ctx.batchId, ctx.transferId, { uncertain: 1, send_state: '' });
    rec = (await store.load(ctx.batchId, ctx.transferId)) as TransferRecord;
  }

  if (!hasPayload(savedSteps(rec))) {
    const guarded = await estimateAndGuard(ctx, rec);
    if ('out' in guarded) return guarded.out;
    rec = guarded.rec;
    const held = await holdUnlessCleared(ctx.deps, rec);
    if (held) return held;
    // EVM rows take the cap once their owner's balance is reserved (evm/evm-flow.ts).
    if (!isEvmChain(rec.from)) rec = await reserveDailySpend(ctx, rec);
  }
  if (rec.from === 'SOLANA') {
    if (!ctx.deps.solana) throw new Later(5_000, 'this worker has no Solana key', 'no_key');
    return await solanaFlow(ctx, ctx.deps.solana, rec);
  }
  if (isEvmChain(rec.from)) {
    if (!ctx.deps.evm) throw new Later(5_000, 'this worker has no EVM key', 'no_key');
    return await evmFlow(ctx, ctx.deps.evm, rec.from, rec);
  }
  return await finish(ctx, 'failed', {
    error_code: 'unsupported_route',
    error_message: `cannot send from ${rec.from}`,
  });
}
