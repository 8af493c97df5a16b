import type { Logger } from '../log/logger.ts';
import { runRecordAfter, type RunRecord, type StepsPatch } from '../store/saved-steps.ts';
import type { FeeEstimate, TransitionChange, TransitionResult } from '../store/transfer-store.ts';
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
 */
export type StepReporter = (step: StepName | null, message: string) => void;

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
 * over, which it returns.
 */
export async function saveStep(ctx: Ctx, patch: StepsPatch): Promise<RunRecord | undefined> {
  const after = await ctx.deps.store.save(ctx.batchId, ctx.transferId, patch, ctx.run?.rec);
  if (ctx.run && after) ctx.run.rec = after;
  return after;
}

/**
 * The one way a run changes its transfer's state: the transition, with the record the run carries
 * (the store lays the move over it, as it wrote it: TransferStore.transition), which the run keeps.
 */
export async function moveStep(ctx: Ctx, change: TransitionChange): Promise<TransitionResult> {
  const res = await ctx.deps.store.transition(ctx.batchId, ctx.transferId, {
    ...change,
    carried: ctx.run?.rec,
  });
  if (res.ok && ctx.run && res.run) ctx.run.rec = res.run;
  return res;
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
