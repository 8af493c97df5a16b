import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { JobsKept } from '../config/jobs-kept.ts';
import { isEvmChain, type Chain } from '../domain/chains.ts';
import type { Logger } from '../log/logger.ts';
import type { TransferJobMetrics } from '../metrics/worker-metrics.ts';
import { policyOf } from '../pipeline/policy.ts';
import type { PipelineDeps } from '../pipeline/run-transfer.ts';
import { JOB_LOG_LINES } from './job-reporter.ts';
import { queueNameFor, settleJobName, transferJobId, transferJobName } from './jobs.ts';
import { transferJobsKept } from './producer.ts';
import { sweepUnfinished } from './sweeper.ts';
import { processTransferJob, settleGivenUpJob, type TransferProcessorDeps } from './transfer-processor.ts';
import type { TransferSpans } from './run-spans.ts';
import { savedSteps } from '../store/saved-steps.ts';
import { queueOptions, workerConnection, type WorkerConnection } from './queue-options.ts';
import type { RedisEndpoint } from '../store/redis-endpoint.ts';

/**
 * Lock and stall settings (`WORKER_LOCK_MS`, domain/hold-times.ts: the lock, a stall check every
 * half of it), chosen for the slowest call:
 * - A job's lock is renewed by BullMQ every lockDuration/2 while the processor runs, so long
 *   in-job waits (backoff, Retry-After) never lose it; only a dead process (kill -9, OOM) lets it
 *   lapse. 30 s lock (the default) = a dead worker's transfer is picked up again within ~30-60 s.
 * - The slowest single call is one service request: connect 3 s + response 10 s by default, below
 *   the lock, so a healthy but busy worker is never mistaken for a stalled one.
 * - maxStalledCount 3: a job that kills its worker three times is given up by the queue; its
 *   transfer is then made final from its saved steps (promise 2), by the `failed` event or the
 *   sweeper.
 */
export const WORKER_MAX_STALLED = 3;
/**
 * Jobs an EVM source chain's worker runs at once, per treasury owner it has a key for: one owner's
 * permits go one at a time (the nonce lease), so a job beyond these only waits for the lease. Per
 * owner: the job finishing after its acceptance, the lease holder with its permit in flight, the one
 * preparing the next permit (docs/nonces.md), and jobs estimating and reserving on their way to the
 * prepare slot. The rest stay in BullMQ's wait list, which costs nothing while they wait, instead of
 * each waiting in a worker slot and going back to the queue when its lease wait runs out.
 */
export const EVM_JOBS_PER_OWNER = 6;

export type TransferWorkers = {
  readonly sources: readonly Chain[];
  /** Stop taking jobs, park in-flight waits, finish or hand back active jobs, close connections. */
  close(): Promise<void>;
  /** Slow every transfer queue for `ms` (the service answered 429). */
  rateLimit(ms: number): Promise<void>;
  /** Re-queues or finalizes unfinished transfers whose jobs are not live (sweeper.ts). */
  sweep(): Promise<number>;
  /** A delayed job that tries to settle a `needs_review` transfer once its payload has expired. */
  scheduleSettle(batchId: string, transferId: string, at: number): Promise<void>;
};

export type TransferWorkersDeps = {
  endpoint: RedisEndpoint;
  connectionOptions?: Record<string, unknown>;
  prefix: string;
  sources: readonly Chain[];
  concurrency: number;
  /** Finished transfer jobs kept (TRANSFER_JOBS_KEPT). */
  jobsKept: JobsKept;
  pipeline: PipelineDeps;
  logger: Logger;
  /** Redis client for the pipeline's own records and job results (shared). */
  redis: Redis;
  /** Outcomes, waits and times to final, for `/metrics` (worker-metrics.ts). */
  metrics?: TransferJobMetrics | undefined;
  /** With tracing on: each run's spans (run-spans.ts). */
  spans?: TransferSpans | undefined;
};

export function createTransferWorkers(deps: TransferWorkersDeps): TransferWorkers {
  const shutdown = new AbortController();
  const { connection, close: closeConnection } = workerConnection(deps.endpoint, deps.connectionOptions);
  const queues = new Map<Chain, Queue>();
  const workers: Worker[] = [];
  for (const source of deps.sources) {
    const queue = new Queue(queueNameFor(source), queueOptions(connection, deps.prefix));
    queue.on('error', (err) =>
      deps.logger.warn({ err: { message: err.message }, queue: queue.name }, 'queue error'),
    );
    queues.set(source, queue);
    workers.push(startWorker(deps, source, connection, shutdown.signal));
  }

  const busyReadAt = new Map<string, number>();
  const sweep = () =>
    sweepUnfinished({
      busyReadAt,
      redis: deps.redis,
      prefix: deps.prefix,
      pipeline: deps.pipeline,
      queues,
      logger: deps.logger,
      metrics: deps.metrics,
    });
  const sweepTimer = setInterval(() => {
    sweep().catch((err: unknown) =>
      deps.logger.warn({ err: { message: (err as Error).message } }, 'sweep failed'),
    );
  }, policyOf(deps.pipeline).holds.sweepEveryMs);
  sweepTimer.unref();
  void sweep().catch(() => {});

  return {
    sources: deps.sources,
    async rateLimit(ms: number) {
      await Promise.all([...queues.values()].map((q) => q.rateLimit(ms)));
    },
    sweep,
    scheduleSettle: (batchId, transferId, at) => scheduleSettle(deps, queues, batchId, transferId, at),
    async close() {
      clearInterval(sweepTimer);
      shutdown.abort();
      await Promise.all(workers.map((w) => w.close()));
      await Promise.all([...queues.values()].map((q) => q.close()));
      await closeConnection();
    },
  };
}

function startWorker(
  deps: TransferWorkersDeps,
  source: Chain,
  connection: WorkerConnection['connection'],
  shutdown: AbortSignal,
): Worker {
  const name = queueNameFor(source);
  const holds = policyOf(deps.pipeline).holds;
  const processorDeps: TransferProcessorDeps = {
    source,
    pipeline: deps.pipeline,
    logger: deps.logger,
    redis: deps.redis,
    metrics: deps.metrics,
    shutdown,
    spans: deps.spans,
  };
  const worker = new Worker(
    name,
    (job: Job, token?: string) => processTransferJob(processorDeps, job, token),
    {
      connection,
      prefix: deps.prefix,
      concurrency: jobsAtOnce(deps.concurrency, deps.pipeline.evm?.signers.length ?? 0, source),
      lockDuration: holds.jobLockMs,
      stalledInterval: holds.stalledIntervalMs,
      maxStalledCount: WORKER_MAX_STALLED,
      ...transferJobsKept(deps.jobsKept),
      autorun: true,
    },
  );
  worker.on('error', (err) =>
    deps.logger.warn({ err: { message: err.message }, queue: name }, 'worker error'),
  );
  worker.on('failed', (job, err) => onJobFailed(processorDeps, job, err));
  worker.on('stalled', (jobId) => deps.logger.warn({ jobId, queue: name }, 'job stalled; it will run again'));
  return worker;
}

/**
 * `WORKER_CONCURRENCY`, bounded on an EVM source chain by what its owners can use
 * (EVM_JOBS_PER_OWNER). Each process bounds itself; with several, the nonce lease in Redis stays
 * the arbiter and the jobs one process takes beyond an owner's pace wait for it in the job.
 */
export function jobsAtOnce(concurrency: number, owners: number, source: Chain): number {
  if (!isEvmChain(source)) return concurrency;
  return Math.min(concurrency, Math.max(1, owners) * EVM_JOBS_PER_OWNER);
}

/**
 * A failed job: ours (UnrecoverableError, the transfer is final already) only logged; one the queue
 * gave up on (attempts exhausted, stalled too often) has its transfer made final at once — the
 * sweeper would, later.
 */
function onJobFailed(deps: TransferProcessorDeps, job: Job | undefined, err: Error): void {
  if (!job) return;
  const ours = err.name === 'UnrecoverableError';
  const gaveUp = !ours && (job.finishedOn !== undefined || job.attemptsMade >= (job.opts.attempts ?? 1));
  (ours ? deps.logger.info : deps.logger.warn).call(
    deps.logger,
    {
      jobId: job.id,
      attemptsMade: job.attemptsMade,
      final: ours || gaveUp,
      reason: err.message.slice(0, 300),
    },
    'job failed',
  );
  if (!gaveUp) return;
  settleGivenUpJob(deps, job).catch((e: unknown) =>
    deps.logger.error({ err: { message: (e as Error).message } }, 'could not finalize an abandoned transfer'),
  );
}

async function scheduleSettle(
  deps: TransferWorkersDeps,
  queues: ReadonlyMap<Chain, Queue>,
  batchId: string,
  transferId: string,
  at: number,
): Promise<void> {
  const rec = await deps.pipeline.store.load(batchId, transferId);
  const queue = rec ? queues.get(rec.from) : undefined;
  if (!rec || !queue) return;
  const steps = savedSteps(rec);
  const { round, payloadGen } = steps;
  const payload = steps.permit ? 'permit' : steps.solanaSigned ? 'solana' : undefined;
  const job = await queue.add(
    settleJobName(transferJobName(rec), payload),
    { batchId, transferId },
    {
      // Unique per round and payload: a kept settle job of an earlier round never swallows this one.
      jobId: `${transferJobId(batchId, transferId, round)}/settle${payloadGen ?? 0}`,
      delay: Math.max(0, at - Date.now()),
      attempts: 20,
      backoff: { type: 'exponential', delay: 5_000 },
      removeOnComplete: { age: 24 * 3600 },
      removeOnFail: { age: 7 * 24 * 3600 },
      keepLogs: JOB_LOG_LINES,
    },
  );
  // Said once, when the job is made (a job that already existed has its line).
  if (job.id && (await queue.getJobLogs(job.id, 0, 0)).count === 0) {
    await job.log(settleWaitLine(batchId, transferId, payload, at));
  }
}

/** The first line of a settle job's log: what it waits for, until when, and what it will decide. */
export function settleWaitLine(
  batchId: string,
  transferId: string,
  payload: 'permit' | 'solana' | undefined,
  at: number,
): string {
  const what =
    payload === 'permit'
      ? "its permit's deadline has passed (the chain's permit nonce then tells whether it was used)"
      : payload === 'solana'
        ? "its Solana transaction has expired (the service's status route then tells whether it ran)"
        : 'its payload has expired';
  return `${new Date().toISOString()} wait: transfer ${batchId}/${transferId} needs review (its send's answer was lost, so it may have been paid); this job looks again at ${new Date(at).toISOString()}, once ${what}: paid → submitted, provably unused → failed (retry may send it), otherwise it stays needs_review for resolve`;
}
