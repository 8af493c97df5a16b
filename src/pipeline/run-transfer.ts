import { randomUUID } from 'node:crypto';
import { isEvmChain } from '../domain/chains.ts';
import { isFinalIntentStatus, isFinalState } from '../domain/transfer.ts';
import { hasPayload, runRecordAfter, type RunRecord } from '../store/saved-steps.ts';
import {
  addEvidence,
  current,
  Later,
  NO_REPORT,
  saveEstimateNow,
  saveStep,
  type Ctx,
  type StepReporter,
} from './context.ts';
import { reserveDailySpend } from './daily-cap.ts';
import type { DeferredWrites } from './deferred-writes.ts';
import { holdUnlessCleared, readClearance } from './recipient-check.ts';
import {
  readOnchainAhead,
  screenOwners,
  screenRecipient,
  type OnchainReadsAhead,
} from './onchain-screening.ts';
import { enforceWorkerControls } from './worker-controls.ts';
import { enforceScreening } from './screening-check.ts';
import { estimateAndGuard } from './estimate-guard.ts';
import { cctpFlow } from './cctp/cctp-flow.ts';
import { cctpEstimateAndGuard } from './cctp/cctp-estimate.ts';
import { evmFlow } from './evm/evm-flow.ts';
import { forgetResolvedPermit } from './evm/evm-settle-review.ts';
import { finish } from './outcomes.ts';
import type { PipelineDeps, StepOutcome } from './pipeline-deps.ts';
import { policyOf } from './policy.ts';
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

export async function runTransfer(
  deps: PipelineDeps,
  batchId: string,
  transferId: string,
  options: {
    /** Aborted when the worker shuts down: the run stops at its next wait, its steps saved. */
    readonly signal?: AbortSignal;
    /** A settle job: only a needs_review payload is looked at again. */
    readonly settleOnly?: boolean;
    readonly report?: StepReporter;
    /** Writes the run sends without waiting, for the caller to await with its own (deferred-writes.ts). */
    readonly deferred?: DeferredWrites;
  } = {},
): Promise<StepOutcome> {
  const signal = options.signal ?? new AbortController().signal;
  const lockLost = new AbortController();
  const token = randomUUID();
  const lock = { token, released: false };
  // The processing lock outlives a healthy job's renewals by far, and a dead process's by one
  // WORKER_LOCK_MS (like BullMQ's own job lock), so a crashed transfer resumes on another worker soon.
  const policy = policyOf(deps);
  const { transferLockMs, transferLockRenewMs } = policy.holds;
  const taken = await deps.store.take(
    batchId,
    transferId,
    { token, ttlMs: transferLockMs },
    !options.settleOnly,
  );
  if (!taken.locked) return laterOf(new Later(1_000, 'another job is processing this transfer', 'lock'));
  const ctx: Ctx = {
    deps,
    policy,
    now: deps.now ?? Date.now,
    signal: AbortSignal.any([signal, lockLost.signal]),
    log: deps.logger.child({ batchId, transferId }),
    report: options.report ?? NO_REPORT,
    batchId,
    transferId,
    lock,
    // One job at a time per transfer, whatever queued it: two runs of one transfer at once could
    // each build and sign a payload. The queue's own lock is per job, so this one is per transfer.
    // The lock, the record and (unless only settling) a queued transfer made `in_progress`, in one
    // step: the run goes on from the record it returns, read once, its saved steps parsed once.
    run: taken.record ? { rec: taken.record } : undefined,
    deferred: options.deferred,
  };
  const renew = setInterval(() => {
    deps.store.relock(batchId, transferId, token, transferLockMs).then(
      (ok) => {
        if (!ok) lockLost.abort();
      },
      () => {},
    );
  }, transferLockRenewMs);
  try {
    const rec = taken.record;
    if (options.settleOnly) {
      if (!rec) return { kind: 'done', state: 'failed' };
      if (rec.state !== 'needs_review') {
        await forgetResolvedPermit(ctx, rec);
        return { kind: 'done', state: rec.state, record: rec };
      }
    }
    return withRecord(ctx, await step(ctx, taken.paused));
  } catch (err) {
    if (err instanceof Later) {
      // Waiting, the transfer shows its fee (an estimate no write carried yet is saved now).
      await saveEstimateNow(ctx).catch((e: unknown) =>
        ctx.log.warn({ err: { message: (e as Error).message } }, 'could not save the fee estimate'),
      );
      return laterOf(err);
    }
    throw err;
  } finally {
    clearInterval(renew);
    // A run that made its transfer final freed the lock in that transition (outcomes.ts).
    if (!lock.released) await deps.store.unlock(batchId, transferId, token).catch(() => {});
  }
}

/** A step that said "wait" (threw Later, the pipeline's one way to say it), as the run's outcome. */
function laterOf(err: Later): StepOutcome {
  return { kind: 'later', delayMs: err.delayMs, reason: err.reason, wait: err.kind };
}

/**
 * A run that ended without a transition of its own (the transfer was final already, or held for
 * approval) reports the record it carries, with the state it decided on.
 */
function withRecord(ctx: Ctx, out: StepOutcome): StepOutcome {
  if (out.kind !== 'done' || out.record || !ctx.run) return out;
  const rec = ctx.run.rec;
  return { ...out, record: rec.state === out.state ? rec : runRecordAfter(rec, { state: out.state }) };
}

/**
 * A job run again for a transfer submitted already (outcomes.ts submitted): its run made it so, then
 * follows its intent in a second write, and a run killed between the two leaves an intent nobody
 * follows — a CCTP burn never minted, a payment whose settlement is never known. Its job is then
 * run again (its lock lapsed): the intent is followed unless it is final, untracked (the route did
 * not know it) or followed already.
 */
async function followedAgain(ctx: Ctx, rec: RunRecord): Promise<void> {
  if (rec.state !== 'submitted' || !rec.intentId || rec.intentUntracked) return;
  if (isFinalIntentStatus(rec.intentStatus)) return;
  await ctx.deps.hooks?.onSubmittedAgain?.(ctx.batchId, ctx.transferId, rec.intentId);
}

/**
 * The run's steps from the record as the take left it (`in_progress` once it moved a queued one),
 * carried with the run's own writes laid over it (Ctx.run), never read again.
 */
async function step(ctx: Ctx, paused: boolean): Promise<StepOutcome> {
  if (!ctx.run) {
    ctx.log.warn('job for a transfer that has no record; nothing to do');
    return { kind: 'done', state: 'failed' };
  }
  let rec: RunRecord = current(ctx);
  if (rec.state === 'needs_review') return await settleNeedsReview(ctx);
  if (isFinalState(rec.state)) {
    await followedAgain(ctx, rec);
    return { kind: 'done', state: rec.state, record: rec };
  }
  if (paused) throw new Later(2_000, 'processing is paused (usdc-batch resume)', 'paused');

  // A crash between "sending" and the answer: that send may have been processed.
  if (rec.steps.sendState === 'sending') {
    ctx.report('send', 'resuming after a send that was cut off (worker stopped before the answer)');
    await addEvidence(
      ctx,
      'a send was interrupted (worker stopped before the answer); its outcome is unknown',
    );
    await saveStep(ctx, { uncertain: true, sendState: 'idle' });
  }

  const road = current(ctx).via;
  const unsigned = !hasPayload(current(ctx).steps, current(ctx));
  // USDC's controls are read on chain while the estimate asks the service (onchain-screening.ts).
  const ahead = unsigned ? readOnchainAhead(ctx) : undefined;
  if (unsigned) {
    // The sanctions lists in force, checked again before anything is signed (docs/screening.md).
    const listed = await enforceScreening(ctx);
    if (listed) return listed;
    // The same pre-sign checks on both roads; only the estimate asks another party (cctp-estimate.ts).
    const guarded = road === 'service' ? await estimateAndGuard(ctx) : await cctpEstimateAndGuard(ctx);
    if (guarded) return guarded;
    // The batch's approval facts and control marks in one read (recipient-check.ts readClearance).
    const cleared = await readClearance(ctx);
    const controls = await enforceWorkerControls(ctx, cleared?.controlMarks);
    if (controls.outcome) return controls.outcome;
    // A batch its controls judged just now may have been held by them: its facts are read again.
    const held = await holdUnlessCleared(ctx, controls.judged ? await readClearance(ctx) : cleared);
    if (held) return held;
    // USDC's own controls, read on chain before anything is signed (docs/promises.md, promise 6).
    const blocked = await screenRecipient(ctx, ahead);
    if (blocked) return blocked;
    // EVM rows take the cap once their owner's balance (or, on the CCTP road, lease) is theirs.
    if (!isEvmChain(current(ctx).from)) await reserveDailySpend(ctx);
  }
  rec = current(ctx);
  // The CCTP road (cctp/cctp-flow.ts): after every pre-sign check above.
  if (road !== 'service') return await cctpRoad(ctx, unsigned, ahead);
  if (rec.from === 'SOLANA') {
    if (!ctx.deps.solana) throw new Later(5_000, 'this worker has no Solana key', 'no_key');
    return await solanaFlow(ctx, ctx.deps.solana);
  }
  if (isEvmChain(rec.from)) {
    if (!ctx.deps.evm) throw new Later(5_000, 'this worker has no EVM key', 'no_key');
    // Owners blacklisted on the source chain sign nothing for a transfer not signed yet.
    const owners = unsigned ? await screenOwners(ctx, ctx.deps.evm, rec.from, ahead) : { evm: ctx.deps.evm };
    if ('outcome' in owners) return owners.outcome;
    return await evmFlow(ctx, owners.evm, rec.from);
  }
  return await finish(ctx, 'failed', {
    error: { code: 'unsupported_route', message: `cannot send from ${rec.from}` },
  });
}

/**
 * The CCTP road, its owners screened as the service road's are: owners blacklisted on the source
 * chain burn nothing for a transfer not begun yet.
 */
async function cctpRoad(
  ctx: Ctx,
  unsigned: boolean,
  ahead: OnchainReadsAhead | undefined,
): Promise<StepOutcome> {
  const { evm, cctp } = ctx.deps;
  const from = current(ctx).from;
  if (!unsigned || !evm || !cctp || !isEvmChain(from)) return await cctpFlow(ctx, cctp);
  const owners = await screenOwners(ctx, evm, from, ahead);
  if ('outcome' in owners) return owners.outcome;
  return await cctpFlow(ctx, { ...cctp, owners: owners.evm.signers.map((s) => s.address) });
}
