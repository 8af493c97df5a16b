import type { Job } from 'bullmq';
import type { Logger } from '../log/logger.ts';
import type { StepName, StepReporter } from '../pipeline/run-transfer.ts';

/** Log lines kept per job (BullMQ `keepLogs`): the newest win, so a long wait cannot grow a job's log. */
export const JOB_LOG_LINES = 20;
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
  build: 25,
  check: 35,
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
 * Writes a run's report to its BullMQ job: `job.log()` a line per report (`<ISO time> <step>:
 * <message>`), `job.updateProgress()` when the step changes. Writes go out in order, one after the
 * other, and never fail or slow the payment: an error is logged and the run goes on. A wait that
 * repeats with the same reason (a transfer behind a nonce lease comes back every few hundred ms) is
 * recognised from the progress the job was fetched with, and costs no write.
 */
export function createJobReporter(job: Job, logger: Logger, now: () => number = Date.now): JobReporter {
  let chain: Promise<void> = Promise.resolve();
  let warned = false;
  const fetched = asProgress(job.progress);
  let step = fetched?.step ?? '';
  let percent = fetched?.progress ?? 0;
  let lastWait = fetched?.step === 'wait' ? fetched.message : undefined;
  const short = (m: string) => m.slice(0, 200);

  const write = (fn: () => Promise<unknown>) => {
    chain = chain.then(fn).then(
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
  const line = (label: string, message: string) => {
    const text = `${new Date(now()).toISOString()} ${label}: ${message}`.slice(0, MAX_LINE);
    write(() => job.log(text));
  };
  const progress = (next: JobProgress) => write(() => job.updateProgress(next));

  return {
    report(name, message) {
      line(name ?? 'seen', message);
      if (name === null || name === step) return;
      step = name;
      if (name !== 'wait') percent = STEP_PERCENT[name];
      lastWait = undefined;
      progress({ step, progress: percent, message: short(message) });
    },
    waiting(reason, delayMs) {
      if (short(reason) === lastWait) return;
      lastWait = short(reason);
      step = 'wait';
      line('wait', `${reason} (again in ${(delayMs / 1000).toFixed(1)} s)`);
      progress({ step: 'wait', progress: percent, message: short(reason) });
    },
    ended(state, message) {
      line(state, message);
      progress({ step: state, progress: 100, message: short(message) });
    },
    async flush() {
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
