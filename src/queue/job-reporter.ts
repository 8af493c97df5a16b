import { hideUrlSecrets } from '../domain/url-display.ts';
import type { Logger } from '../log/logger.ts';
import type { StepName, StepReporter } from '../pipeline/run-transfer.ts';

/** Log lines kept per job (BullMQ `keepLogs`): the newest win, so a long wait cannot grow a job's log. */
export const JOB_LOG_LINES = 20;
/**
 * A step's progress is written once the step has lasted this long: a person (or bull-board's
 * poll) sees a step that takes time — a slow call, a wait in the job — while a run that is over
 * in a few hundred ms writes only its final progress. Each progress write is a script and an event.
 */
export const PROGRESS_AFTER_MS = 500;
/** A log line is cut here: lines describe, they never carry a payload. */
const MAX_LINE = 500;

/**
 * The job's progress: the step the run is at, how far that is (bull-board draws `progress` as a
 * ring), and the last thing said about it.
 */
export type JobProgress = { readonly step: string; readonly progress: number; readonly message: string };

/** How far each step is along a run, for the ring; a wait keeps the step it interrupted. */
const STEP_PERCENT: Record<StepName, number> = {
  estimate: 10,
  guard: 15,
  build: 25,
  verify: 35,
  sign: 45,
  approve: 45,
  send: 60,
  burn: 60,
  answer: 80,
  wait: -1,
  settle: 90,
  // The CCTP road's attestation and mint are the intent follower's (pipeline/cctp/cctp-follow.ts).
  attest: 85,
  mint: 95,
};

export type JobReporter = {
  /** The pipeline's reporter (context.ts): a log line, and the step as progress when it changes. */
  readonly report: StepReporter;
  /** The job is handed back: logged once per distinct reason (a wait that repeats is not logged again). */
  waiting(reason: string, delayMs: number): void;
  /** The last line and the final progress: the transfer's state when the job ended. */
  ended(state: string, message: string): void;
  /** Resolves once every line and progress written so far is in Redis (never rejects). */
  flush(): Promise<void>;
};

/**
 * Where a report goes: the lines said since the last write, and the newest progress if it changed.
 * One call is one write (job-hash.ts jobReportSink: one script, one round trip).
 */
export type JobReportSink = (lines: readonly string[], progress: JobProgress | undefined) => Promise<void>;

/** What a reporter holds between writes. */
type ReporterState = {
  readonly jobId: string | undefined;
  readonly sink: JobReportSink;
  readonly logger: Logger;
  readonly now: () => number;
  readonly progressAfterMs: number;
  /** The step the run is at, how far along, and the reason of the last wait (not logged twice). */
  step: string;
  percent: number;
  lastWait: string | undefined;
  /** Lines said and the newest progress (a state, not a history), until the next write takes them. */
  lines: string[];
  /**
   * Where in `lines` an announcing line waits (StepReporter's `announce`): the line that says how
   * its call went replaces it; a step's progress write leaves it (and what follows it) held.
   */
  announced: number | undefined;
  pending: JobProgress | undefined;
  /** A step's progress that waits PROGRESS_AFTER_MS; a newer step, a wait or the end replaces it. */
  soon: { timer: NodeJS.Timeout; next: JobProgress } | undefined;
  /**
   * Writes in order: the last one queued, whether one is queued and not begun (and whether it is a
   * step's progress only, which leaves a held announcement held), whether a failure was logged.
   */
  chain: Promise<void>;
  queued: boolean;
  progressOnly: boolean;
  warned: boolean;
};

/**
 * Writes a run's report to its BullMQ job: a line per report (`<ISO time> <step>: <message>`), and
 * the step as progress once it has lasted PROGRESS_AFTER_MS, and at the end. Lines wait in memory
 * and go out with the next write — a step that lasts (its progress), a wait, the end — so a run over
 * in a few hundred ms costs one write, not one per line. Writes go out in order and never fail or
 * slow the payment: an error is logged and the run goes on. A wait that repeats with the same reason
 * (a transfer behind a nonce lease comes back) is recognised from the progress the job was fetched
 * with, and costs no write.
 */
export function createJobReporter(
  job: { readonly id?: string | undefined; readonly progress: unknown },
  sink: JobReportSink,
  logger: Logger,
  now: () => number = Date.now,
  progressAfterMs = PROGRESS_AFTER_MS,
): JobReporter {
  const fetched = asProgress(job.progress);
  const r: ReporterState = {
    jobId: job.id,
    sink,
    logger,
    now,
    progressAfterMs,
    step: fetched?.step ?? '',
    percent: fetched?.progress ?? 0,
    lastWait: fetched?.step === 'wait' ? fetched.message : undefined,
    lines: [],
    announced: undefined,
    pending: undefined,
    soon: undefined,
    chain: Promise.resolve(),
    queued: false,
    progressOnly: false,
    warned: false,
  };
  return {
    report: (name, message, announce) => reported(r, name, message, announce === true),
    waiting: (reason, delayMs) => waiting(r, reason, delayMs),
    ended: (state, message) => ended(r, state, message),
    flush: () => flush(r),
  };
}

/** A progress message: no URL secret, at most 200 characters. */
function short(message: string): string {
  return hideUrlSecrets(message).slice(0, 200);
}

/** A report: its line, and its step as progress (soon) when the step changed. */
function reported(r: ReporterState, name: StepName | null, message: string, announce: boolean): void {
  addLine(r, name ?? 'seen', message, announce);
  if (name === null || name === r.step) return;
  r.step = name;
  if (name !== 'wait') r.percent = STEP_PERCENT[name];
  r.lastWait = undefined;
  progressSoon(r, { step: name, progress: r.percent, message: short(message) });
}

/** The job is handed back: a line and the progress at once, unless the same wait was said last. */
function waiting(r: ReporterState, reason: string, delayMs: number): void {
  if (short(reason) === r.lastWait) return;
  r.lastWait = short(reason);
  r.step = 'wait';
  addLine(r, 'wait', `${reason} (again in ${(delayMs / 1000).toFixed(1)} s)`);
  cancelSoon(r);
  progressNow(r, { step: 'wait', progress: r.percent, message: short(reason) });
}

/** The run ended: the closing line and the final progress. */
function ended(r: ReporterState, state: string, message: string): void {
  addLine(r, state, message);
  cancelSoon(r);
  progressNow(r, { step: state, progress: 100, message: short(message) });
}

/** Writes what is still held; a run that ends without `ended` or `waiting` shows the step it was at. */
async function flush(r: ReporterState): Promise<void> {
  if (r.soon) {
    const { next } = r.soon;
    cancelSoon(r);
    progressNow(r, next);
  } else if (r.lines.length > 0) {
    send(r);
  }
  await r.chain;
}

/**
 * A line to write with the next write; one quoting an error that names a URL keeps only its scheme,
 * host and port. A line that says how things went (not an observation, `seen`, nor a wait) replaces
 * an announcing line still held: the log says each call once, by its answer. While the call lasts,
 * the step's progress shows the announcement (a progress write leaves the line held); a wait, the
 * run's end or its flush write it, so a call the run never saw answered stays in the log.
 */
function addLine(r: ReporterState, label: string, message: string, announce = false): void {
  if (r.announced !== undefined && label !== 'seen' && label !== 'wait') {
    r.lines.splice(r.announced, 1);
    r.announced = undefined;
  }
  if (announce) r.announced = r.lines.length;
  r.lines.push(`${new Date(r.now()).toISOString()} ${label}: ${hideUrlSecrets(message)}`.slice(0, MAX_LINE));
}

function progressNow(r: ReporterState, next: JobProgress): void {
  r.pending = next;
  send(r);
}

function progressSoon(r: ReporterState, next: JobProgress): void {
  cancelSoon(r);
  const timer = setTimeout(() => {
    r.soon = undefined;
    r.pending = next;
    send(r, true);
  }, r.progressAfterMs);
  timer.unref();
  r.soon = { timer, next };
}

function cancelSoon(r: ReporterState): void {
  if (r.soon) clearTimeout(r.soon.timer);
  r.soon = undefined;
}

/**
 * Queues one write of what is held (once: a write not yet begun takes everything said until it
 * begins). `progressOnly`: a step's progress, which leaves a held announcement and the lines after it.
 */
function send(r: ReporterState, progressOnly = false): void {
  // A write of everything held: an announcement in it is said, no longer replaced.
  if (!progressOnly) r.announced = undefined;
  if (r.queued) {
    r.progressOnly &&= progressOnly;
    return;
  }
  r.queued = true;
  r.progressOnly = progressOnly;
  r.chain = r.chain
    .then(() => writeHeld(r))
    .then(
      () => {},
      (err: unknown) => warnOnce(r, err),
    );
}

async function writeHeld(r: ReporterState): Promise<void> {
  r.queued = false;
  const held = r.progressOnly ? r.announced : undefined;
  const cut = held ?? r.lines.length;
  const out = r.lines.slice(0, cut);
  const p = r.pending;
  r.lines = r.lines.slice(cut);
  r.announced = held === undefined ? undefined : 0;
  r.pending = undefined;
  if (out.length > 0 || p) await r.sink(out, p);
}

/** A failed write is logged once per run; the payment goes on. */
function warnOnce(r: ReporterState, err: unknown): void {
  if (r.warned) return;
  r.warned = true;
  r.logger.warn(
    { jobId: r.jobId, err: { message: (err as Error).message } },
    'could not write to the job log',
  );
}

function asProgress(p: unknown): JobProgress | undefined {
  if (typeof p !== 'object' || p === null) return undefined;
  const { step, progress, message } = p as Record<string, unknown>;
  if (typeof step !== 'string' || typeof message !== 'string') return undefined;
  return { step, progress: typeof progress === 'number' ? progress : 0, message };
}
