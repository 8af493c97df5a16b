import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { hideUrlSecrets } from '../domain/url-display.ts';
import type { Logger } from '../log/logger.ts';
import type { StepName, StepReporter } from '../pipeline/run-transfer.ts';
import { luaScript, runScript } from '../store/lua-script.ts';
import { jobKeyOf } from './job-outcome.ts';

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
  send: 60,
  answer: 80,
  wait: -1,
  settle: 90,
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
 * One call is one write (jobReportSink: one script, one round trip).
 */
export type JobReportSink = (lines: readonly string[], progress: JobProgress | undefined) => Promise<void>;

/**
 * Appends lines to a job's log (the newest JOB_LOG_LINES kept, as BullMQ's `keepLogs`) and sets its
 * progress, in one step and only while the job exists — what `job.log()` per line and
 * `job.updateProgress()` did in a script each (minus the progress event on the queue's stream,
 * which nothing reads). The list is trimmed only once it is longer than it may be.
 * KEYS[1] the job's `:logs` list, KEYS[2] the job hash; ARGV[1] lines kept, ARGV[2] the progress JSON or
 * '', ARGV[3..] the lines. Returns 1, or 0 when the job is gone.
 */
const WRITE_REPORT = luaScript(`
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
if #ARGV > 2 then
  local kept = tonumber(ARGV[1])
  if redis.call('RPUSH', KEYS[1], unpack(ARGV, 3)) > kept then redis.call('LTRIM', KEYS[1], -kept, -1) end
end
if ARGV[2] ~= '' then redis.call('HSET', KEYS[2], 'progress', ARGV[2]) end
return 1
`);

/** The sink of a transfer job: its hash and log in Redis (docs/data-model.md "Step logs"). */
export function jobReportSink(redis: Redis, job: Pick<Job, 'queueQualifiedName' | 'id'>): JobReportSink {
  const key = jobKeyOf(job);
  return async (lines, progress) => {
    await runScript(
      redis,
      WRITE_REPORT,
      [`${key}:logs`, key],
      [JOB_LOG_LINES, progress ? JSON.stringify(progress) : '', ...lines],
    );
  };
}

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
  let chain: Promise<void> = Promise.resolve();
  let warned = false;
  const fetched = asProgress(job.progress);
  let step = fetched?.step ?? '';
  let percent = fetched?.progress ?? 0;
  let lastWait = fetched?.step === 'wait' ? fetched.message : undefined;
  const short = (m: string) => hideUrlSecrets(m).slice(0, 200);

  // Lines said and the newest progress (a state, not a history), until the next write takes them.
  let lines: string[] = [];
  let pending: JobProgress | undefined;
  let queued = false;
  const send = () => {
    if (queued) return;
    queued = true;
    chain = chain
      .then(async () => {
        queued = false;
        const out = lines;
        const p = pending;
        lines = [];
        pending = undefined;
        if (out.length > 0 || p) await sink(out, p);
      })
      .then(
        () => {},
        (err: unknown) => {
          if (warned) return;
          warned = true;
          logger.warn(
            { jobId: job.id, err: { message: (err as Error).message } },
            'could not write to the job log',
          );
        },
      );
  };
  // A line may quote an error naming a URL (an RPC's): only its scheme, host and port are kept.
  const line = (label: string, message: string) => {
    lines.push(`${new Date(now()).toISOString()} ${label}: ${hideUrlSecrets(message)}`.slice(0, MAX_LINE));
  };
  const progress = (next: JobProgress) => {
    pending = next;
    send();
  };
  // A step's progress waits PROGRESS_AFTER_MS; a newer step, a wait or the end replaces it.
  let soon: { timer: NodeJS.Timeout; next: JobProgress } | undefined;
  const cancelSoon = () => {
    if (soon) clearTimeout(soon.timer);
    soon = undefined;
  };
  const progressSoon = (next: JobProgress) => {
    cancelSoon();
    const timer = setTimeout(() => {
      soon = undefined;
      progress(next);
    }, progressAfterMs);
    timer.unref();
    soon = { timer, next };
  };

  return {
    report(name, message) {
      line(name ?? 'seen', message);
      if (name === null || name === step) return;
      step = name;
      if (name !== 'wait') percent = STEP_PERCENT[name];
      lastWait = undefined;
      progressSoon({ step, progress: percent, message: short(message) });
    },
    waiting(reason, delayMs) {
      if (short(reason) === lastWait) return;
      lastWait = short(reason);
      step = 'wait';
      line('wait', `${reason} (again in ${(delayMs / 1000).toFixed(1)} s)`);
      cancelSoon();
      progress({ step: 'wait', progress: percent, message: short(reason) });
    },
    ended(state, message) {
      line(state, message);
      cancelSoon();
      progress({ step: state, progress: 100, message: short(message) });
    },
    async flush() {
      // A run that ends without `ended` or `waiting` (an unexpected error) shows the step it was at.
      if (soon) {
        const { next } = soon;
        cancelSoon();
        progress(next);
      } else if (lines.length > 0) {
        send();
      }
      await chain;
    },
  };
}

function asProgress(p: unknown): JobProgress | undefined {
  if (typeof p !== 'object' || p === null) return undefined;
  const { step, progress, message } = p as Record<string, unknown>;
  if (typeof step !== 'string' || typeof message !== 'string') return undefined;
  return { step, progress: typeof progress === 'number' ? progress : 0, message };
}
