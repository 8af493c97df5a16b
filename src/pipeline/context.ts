import type { TransferState } from '../domain/transfer.ts';
import type { Logger } from '../log/logger.ts';
import { runRecordAfter, type RunRecord, type StepsPatch } from '../store/saved-steps.ts';
import type { FeeEstimate, TransitionChange, TransitionResult } from '../store/transfer-store.ts';
import type { DeferredWrites } from './deferred-writes.ts';
import type { PipelineDeps, WaitKind } from './pipeline-deps.ts';
import type { PipelinePolicy } from './policy.ts';

/**
 * The steps a run reports (the job's progress shows the current one; with tracing on, each is a
 * span: docs/traces.md): estimate → guard → sign (EVM) or build → verify → sign (Solana) → send →
 * answer; `wait` for anything that hands the job back, `settle` for a needs_review payload looked
 * at again. The CCTP road (cctp/cctp-flow.ts): estimate → guard → approve → burn, then (by the
 * intent follower) attest → mint. A step is reported as it begins, and again with what it found.
 */
export type StepName =
  | 'estimate'
  | 'guard'
  | 'build'
  | 'verify'
  | 'sign'
  | 'send'
  | 'answer'
  | 'wait'
  | 'settle'
  | 'approve'
  | 'burn'
  | 'attest'
  | 'mint';

/**
 * Where a run says what it does, a line per call, wait and decision with its reason: the queue
 * layer writes it to the job's log (and the step to its progress). `step` null adds a line without
 * changing the step. Never given a secret, a signature or a signed payload.
 *
 * `announce` marks a line that says a call or check is about to happen ("asking the service for
 * the fee …"): the job's log keeps it only while it is the last word — the call turned out slow,
 * or the job was handed back or stopped before its answer (job-reporter.ts). Once the run says how
 * the call went, that line replaces it.
 */
export type StepReporter = (step: StepName | null, message: string, announce?: boolean) => void;

/** Reports nothing: a run outside a job (tests, tools). */
export const NO_REPORT: StepReporter = () => {};

/** One run of one transfer: its deps, its clock, its shutdown signal and its ids. */
export type Ctx = {
  readonly deps: PipelineDeps;
  readonly policy: PipelinePolicy;
  readonly now: () => number;
  readonly signal: AbortSignal;
  readonly log: Logger;
  readonly report: StepReporter;
  readonly batchId: string;
  readonly transferId: string;
  /**
   * The run's hold on its transfer's processing lock: a transition that makes the transfer final
   * frees it in its own step (`released`), so the run's end does not free it again.
   */
  readonly lock?: { readonly token: string; released: boolean } | undefined;
  /**
   * The transfer as this run carries it (see RunRecord): read once, when the run took it, with its
   * own writes laid over it since, as the store wrote them (saveStep, moveStep, saveEstimateNow,
   * addEvidence, a send's fenced saves; noteWritten for another store module's write). While the run holds the transfer's lock
   * no other run writes it, operators' commands move only transfers that are not `in_progress`
   * (cancel: queued; retry: failed; resolve: needs_review), and the follower writes only submitted
   * ones. Absent for a step taken on another transfer's behalf (otherTransfer).
   * `estimate` is the run's fee estimate while no write has carried it yet: the mark of the first
   * send carries it (send-attempt.ts; the batch's totals take it at the transfer's next state
   * change), or it is saved alone, with the batch's totals, before a state change or a wait
   * (saveEstimateNow).
   */
  readonly run?: { rec: RunRecord; estimate?: FeeEstimate | undefined } | undefined;
  /**
   * Where a write the run need not wait for goes when its caller ends the job with a write of its
   * own, the two then one round trip (deferred-writes.ts); absent, the run awaits it.
   */
  readonly deferred?: DeferredWrites | undefined;
};

/** The same run, acting on another transfer's record (settling a permit it left presumed used). */
export function otherTransfer(ctx: Ctx, batchId: string, transferId: string): Ctx {
  // Its lines go to this job's log, saying which transfer they are about; its steps are not ours.
  const report: StepReporter = (_step, message) => ctx.report(null, `${batchId}/${transferId}: ${message}`);
  const log = ctx.deps.logger.child({ batchId, transferId });
  // The other transfer's lock is not this run's: its transitions free nothing; its record is not
  // carried (what is written to it is written in one step each, reading nothing first).
  return { ...ctx, batchId, transferId, report, log, lock: undefined, run: undefined };
}

/** The transfer as this run carries it. */
export function current(ctx: Ctx): RunRecord {
  if (!ctx.run) throw new Error(`no record carried for ${ctx.batchId}/${ctx.transferId}`);
  return ctx.run.rec;
}

/**
 * Ends the run: the job is handed back to the queue to run again after `delayMs`. `reason` is
 * written to the job's log, so it says what is awaited in words an operator can act on.
 */
export class Later extends Error {
  readonly delayMs: number;
  readonly reason: string;
  readonly kind: WaitKind;
  constructor(delayMs: number, reason: string, kind: WaitKind = 'retry') {
    super(reason);
    this.delayMs = delayMs;
    this.reason = reason;
    this.kind = kind;
  }
}

/**
 * The one way a run writes its transfer's saved steps (no state change): the write, in the run's
 * terms (StepsPatch; only the store knows the stored fields), and the carried record with it laid
 * over, which it returns. A run holding its transfer's lock writes fenced by it (fenced-save.lua):
 * a run whose lock lapsed during a call (another run may hold the transfer now) writes nothing and
 * stops (lockLost), so it never clears a payload, `uncertain` or a send's state the other carries.
 */
export async function saveStep(ctx: Ctx, patch: StepsPatch): Promise<RunRecord | undefined> {
  const { store } = ctx.deps;
  if (!ctx.lock || ctx.lock.released) {
    const after = await store.save(ctx.batchId, ctx.transferId, patch, ctx.run?.rec);
    if (ctx.run && after) ctx.run.rec = after;
    return after;
  }
  const fence = { token: ctx.lock.token, carried: ctx.run?.rec };
  const saved = await store.saveFenced(ctx.batchId, ctx.transferId, patch, fence);
  if (!saved.held) lockLost(ctx);
  if (ctx.run && saved.record) ctx.run.rec = saved.record;
  return saved.record;
}

/**
 * Stops a run that no longer holds its transfer's processing lock (a fenced write found it
 * another's, or gone): it writes nothing more, and its job comes back later to find the transfer
 * as the run holding it left it.
 */
export function lockLost(ctx: Ctx): never {
  ctx.log.warn('this run lost its processing lock: it stops, writing nothing more');
  ctx.report('wait', 'lost the processing lock (another run has the transfer): nothing written');
  throw new Later(jittered(ctx, 1_000), 'another run holds this transfer now', 'lock');
}

/**
 * The one way a run changes its transfer's state: the transition, with the record the run carries
 * (the store lays the move over it, as it wrote it: TransferStore.transition), which the run keeps.
 * Every move but to `submitted` is fenced by the run's lock token (fenceOf): a run whose lock lapsed
 * during a call writes nothing and stops (lockLost).
 */
export async function moveStep(ctx: Ctx, change: TransitionChange): Promise<TransitionResult> {
  const res = await ctx.deps.store.transition(ctx.batchId, ctx.transferId, {
    ...change,
    ...fenceOf(ctx, change.to),
    carried: ctx.run?.rec,
  });
  if ('lockLost' in res) lockLost(ctx);
  if (res.ok && ctx.run && res.run) ctx.run.rec = res.run;
  return res;
}

/**
 * The run's lock token a move of its transfer is fenced by (TransitionChange.fence): every move but
 * to `submitted`, while the run holds its lock. A run whose lock lapsed during a call (another run
 * may hold the transfer and have sent since) must not fail it, leave it for review or queue it again
 * from what it carried; an acceptance it was answered is a fact, recorded whoever holds the lock
 * (transfer-move.lua).
 */
function fenceOf(ctx: Ctx, to: TransferState): { fence?: string } {
  return ctx.lock && !ctx.lock.released && to !== 'submitted' ? { fence: ctx.lock.token } : {};
}

/**
 * Saves the run's fee estimate if no write has carried it yet (Ctx.run): before a state change,
 * and when the run hands its job back to wait, so that the record and the batch's totals show it.
 */
export async function saveEstimateNow(ctx: Ctx): Promise<void> {
  const estimate = ctx.run?.estimate;
  if (!estimate) return;
  const after = await ctx.deps.store.saveEstimate(ctx.batchId, ctx.transferId, estimate, ctx.run?.rec);
  if (ctx.run && after) ctx.run.rec = after;
  estimateWritten(ctx);
}

/** A write carried the run's fee estimate (or saved it alone): no later write needs to. */
export function estimateWritten(ctx: Ctx): void {
  if (ctx.run) ctx.run.estimate = undefined;
}

/**
 * Lays a write another store module made (a reservation naming the owner, a counter) over the
 * carried record, and returns it; nothing is written here.
 */
export function noteWritten(ctx: Ctx, change: Parameters<typeof runRecordAfter>[1]): RunRecord | undefined {
  if (!ctx.run) return undefined;
  ctx.run.rec = runRecordAfter(ctx.run.rec, change);
  return ctx.run.rec;
}

/**
 * Appends a line to the transfer's evidence (what was seen that decides its fate: the status
 * document's `evidence`), in one step in Redis, and to the carried record. The job's log gets it
 * too (evidence never holds a secret: it describes, it does not copy payloads).
 */
export async function addEvidence(ctx: Ctx, line: string): Promise<void> {
  ctx.report(null, line);
  const after = await ctx.deps.store.appendEvidence(
    ctx.batchId,
    ctx.transferId,
    line,
    ctx.now(),
    ctx.run?.rec,
  );
  if (ctx.run && after) ctx.run.rec = after;
}

/** Waits inside the job; on shutdown the job is parked with its saved steps. */
export async function wait(ctx: Ctx, ms: number): Promise<void> {
  if (ctx.signal.aborted) throw new Later(ms, 'shutting down', 'shutdown');
  await new Promise<void>((resolve) => {
    const onAbort = () => {
      clearTimeout(t);
      resolve();
    };
    const t = setTimeout(() => {
      ctx.signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    ctx.signal.addEventListener('abort', onAbort, { once: true });
  });
  if (ctx.signal.aborted) throw new Later(0, 'shutting down', 'shutdown');
}

/** A delay with ±25 % jitter, so that transfers waiting for the same thing do not come back at once. */
export function jittered(ctx: Ctx, ms: number): number {
  return Math.round(ms * (0.75 + (ctx.deps.random ?? Math.random)() * 0.5));
}
