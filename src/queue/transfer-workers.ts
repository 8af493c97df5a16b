import { DelayedError, Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Chain } from '../domain/chains.ts';
import type { Logger } from '../log/logger.ts';
import { runTransfer, type PipelineDeps } from '../pipeline/run-transfer.ts';
import { finalizeAbandoned } from '../pipeline/abandon.ts';
import { DEFAULT_POLICY } from '../pipeline/policy.ts';
import { parseTransferJobData, queueNameFor, transferJobId } from './jobs.ts';

/** The round a job id belongs to (`…/r2` → 2; no suffix → 0). */
function roundOf(jobId: string | undefined): number {
  const m = /\/r([0-9]+)$/.exec(jobId ?? '');
  return m ? Number(m[1]) : 0;
}

/**
 * Lock and stall settings, chosen for the slowest call:
 * - A job's lock is renewed by BullMQ every lockDuration/2 while the processor runs, so long
 *   in-job waits (backoff, Retry-After) never lose it; only a dead process (kill -9, OOM) lets it
 *   lapse. 30 s lock = a dead worker's transfer is picked up again within ~30-60 s.
 * - The slowest single call is one service request: connect 3 s + response 10 s by default, far
 *   below the lock, so a healthy but busy worker is never mistaken for a stalled one.
 * - maxStalledCount 3: a job that kills its worker three times is given up by the queue; the
 *   sweeper then makes its transfer final from its saved steps (promise 2).
 */
export const WORKER_LOCK_MS = 30_000;
export const WORKER_STALLED_INTERVAL_MS = 15_000;
export const WORKER_MAX_STALLED = 3;

export type TransferWorkers = {
  readonly sources: readonly Chain[];
  /** Stop taking jobs, park in-flight waits, finish or hand back active jobs, close connections. */
  close(): Promise<void>;
  /** Slow every transfer queue for `ms` (the service answered 429). */
  rateLimit(ms: number): Promise<void>;
  /** Finalizes transfers whose jobs the queue gave up on (stalled too often, attempts exhausted). */
  sweep(): Promise<number>;
  /** A delayed job that tries to settle a `needs_review` transfer once its payload has expired. */
  scheduleSettle(batchId: string, transferId: string, at: number): Promise<void>;
};

export function createTransferWorkers(deps: {
  redisUrl: string;
  connectionOptions?: Record<string, unknown>;
  prefix: string;
  sources: readonly Chain[];
  concurrency: number;
  pipeline: PipelineDeps;
  logger: Logger;
  /** Redis client for the pipeline's own records (shared). */
  redis: Redis;
}): TransferWorkers {
  const { logger } = deps;
  const shutdown = new AbortController();
  const connection = { url: deps.redisUrl, maxRetriesPerRequest: null, ...deps.connectionOptions };
  const queues = new Map<Chain, Queue>();
  const workers: Worker[] = [];

  for (const source of deps.sources) {
    const name = queueNameFor(source);
    const queue = new Queue(name, { connection, prefix: deps.prefix });
    queue.on('error', (err) => logger.warn({ err: { message: err.message }, queue: name }, 'queue error'));
    queues.set(source, queue);

    const processor = async (job: Job, token?: string): Promise<string> => {
      const data = parseTransferJobData(job.data);
      if (!data) {
        logger.error({ jobId: job.id, queue: name }, 'job data is not a transfer pointer; dropping the job');
        return 'invalid';
      }
      let outcome;
      try {
        outcome = await runTransfer(deps.pipeline, data.batchId, data.transferId, shutdown.signal, {
          settleOnly: job.name === 'settle',
        });
      } catch (err) {
        // An unexpected error (a bug, Redis trouble) goes back to the queue's retries, but not for
        // ever: past the transient deadline the transfer is made final from its saved steps.
        const rec = await deps.pipeline.store.load(data.batchId, data.transferId).catch(() => undefined);
        const first = Number(rec?.raw['first_seen_at'] ?? Date.now());
        const budget = (deps.pipeline.policy ?? DEFAULT_POLICY).transientDeadlineMs + 30_000;
        if (rec && Date.now() - first > budget) {
          await finalizeAbandoned(
            deps.pipeline,
            data.batchId,
            data.transferId,
            `kept failing with an unexpected error: ${(err as Error).message?.slice(0, 200)}`,
            roundOf(job.id),
          );
          return 'abandoned';
        }
        throw err;
      }
      if (outcome.kind === 'later') {
        await job.moveToDelayed(Date.now() + Math.max(0, outcome.delayMs), token);
        throw new DelayedError(outcome.reason);
      }
      return outcome.state;
    };

    const worker = new Worker(name, processor, {
      connection,
      prefix: deps.prefix,
      concurrency: deps.concurrency,
      lockDuration: WORKER_LOCK_MS,
      stalledInterval: WORKER_STALLED_INTERVAL_MS,
      maxStalledCount: WORKER_MAX_STALLED,
      autorun: true,
    });
    worker.on('error', (err) => logger.warn({ err: { message: err.message }, queue: name }, 'worker error'));
    worker.on('failed', (job, err) => {
      if (!job) return;
      const data = parseTransferJobData(job.data);
      const final = job.attemptsMade >= (job.opts.attempts ?? 1);
      logger.warn(
        { jobId: job.id, attemptsMade: job.attemptsMade, final, err: { message: err.message } },
        'job failed',
      );
      if (final && data) {
        finalizeAbandoned(
          deps.pipeline,
          data.batchId,
          data.transferId,
          `the queue gave up: ${err.message}`,
          roundOf(job.id),
        ).catch((e: unknown) => logger.error({ err: e }, 'could not finalize an abandoned transfer'));
      }
    });
    worker.on('stalled', (jobId) => logger.warn({ jobId, queue: name }, 'job stalled; it will run again'));
    workers.push(worker);
  }

  async function sweep(): Promise<number> {
    let n = 0;
    for (const queue of queues.values()) {
      const failed = await queue.getFailed(0, 499);
      for (const job of failed) {
        const data = parseTransferJobData(job.data);
        if (!data) continue;
        if (
          await finalizeAbandoned(
            deps.pipeline,
            data.batchId,
            data.transferId,
            `the queue gave up: ${job.failedReason}`,
            roundOf(job.id),
          )
        ) {
          n++;
        }
      }
    }
    return n;
  }
  const sweepTimer = setInterval(() => {
    sweep().catch((err: unknown) =>
      logger.warn({ err: { message: (err as Error).message } }, 'sweep failed'),
    );
  }, 30_000);
  sweepTimer.unref();
  void sweep().catch(() => {});

  return {
    sources: deps.sources,
    async rateLimit(ms: number) {
      await Promise.all([...queues.values()].map((q) => q.rateLimit(ms)));
    },
    sweep,
    async scheduleSettle(batchId, transferId, at) {
      const rec = await deps.pipeline.store.load(batchId, transferId);
      const queue = rec ? queues.get(rec.from) : undefined;
      if (!rec || !queue) return;
      await queue.add(
        'settle',
        { batchId, transferId },
        {
          jobId: `${transferJobId(batchId, transferId)}/settle${rec.raw['payload_gen'] ?? '0'}`,
          delay: Math.max(0, at - Date.now()),
          attempts: 20,
          backoff: { type: 'exponential', delay: 5_000 },
          removeOnComplete: { age: 24 * 3600 },
          removeOnFail: { age: 7 * 24 * 3600 },
        },
      );
    },
    async close() {
      clearInterval(sweepTimer);
      shutdown.abort();
      await Promise.all(workers.map((w) => w.close()));
      await Promise.all([...queues.values()].map((q) => q.close()));
    },
  };
}
