import { Queue, SpanKind, TelemetryAttributes, type JobsOptions, type WorkerOptions } from 'bullmq';
import { Redis } from 'ioredis';
import type { JobsKept } from '../config/jobs-kept.ts';
import type { Chain } from '../domain/chains.ts';
import type { TransferJobSpec } from '../domain/transfer-jobs.ts';
import { addCompletionCallback, CALLBACK_QUEUE } from './callbacks.ts';
import { followIntent } from './follow-intent.ts';
import { addWaitingJobs, type NewJob } from './job-hash.ts';
import { transferJobId, transferJobName, type TransferJobData } from './jobs.ts';
import { queueOptions } from './queue-options.ts';
import { transferQueueTelemetry } from './queue-telemetry.ts';
import { openTransferQueues } from './transfer-queues.ts';
import { ATTR } from '../trace/attributes.ts';
import { activeTracing } from '../trace/tracing.ts';

/**
 * Job options of every transfer job. The queue is only the transport: the worker's saved steps in
 * the transfer record decide when a transfer is final (docs/promises.md), so BullMQ must never give up
 * on a job before the worker does —
 * - `attempts` is far above what the worker's own time budget (final within 3 minutes of transient
 *   failures) can use at this backoff, so "attempts exhausted" is a safety net, not a policy;
 * - a fixed, jittered backoff keeps retries of many transfers from arriving in step.
 * Every job hash keeps its options (BullMQ's `opts`) for as long as the job is kept, so what is the
 * same for every transfer job and only its worker reads lives there instead: how long finished
 * jobs are kept (transferJobsKept). The step log needs no `keepLogs`: the job reporter writes and
 * trims it itself (job-reporter.ts).
 */
export const TRANSFER_JOB_OPTIONS = {
  attempts: 1000,
  backoff: { type: 'fixed', delay: 2_000, jitter: 0.5 },
} as const satisfies JobsOptions;

/**
 * How the transfer workers keep finished transfer jobs (TRANSFER_JOBS_KEPT, docs/data-model.md; BullMQ
 * applies a worker's `removeOnComplete`/`removeOnFail` to every job that does not set its own):
 * trimmed by age and count as jobs finish — the record keeps every outcome.
 */
export function transferJobsKept(kept: JobsKept): Pick<WorkerOptions, 'removeOnComplete' | 'removeOnFail'> {
  return {
    removeOnComplete: { age: kept.completed.ageSeconds, count: kept.completed.count },
    removeOnFail: { age: kept.failed.ageSeconds, count: kept.failed.count },
  };
}

/** Jobs per add: one script and one Redis round trip each, bounded in size. */
const BULK_CHUNK = 1000;

export type ProducerOptions = {
  /** A Redis URL (the producer opens its own fail-fast connection) or a client to share. */
  readonly connection: string | Redis;
  readonly prefix: string;
};

export type Producer = {
  /** Adds one job per transfer to the queue of its source chain; an existing job id is left as is. */
  addTransfers(batchId: string, transfers: readonly TransferJobSpec[], round?: number): Promise<void>;
  /** Has the workers follow an intent an operator recorded (`resolve --submitted`). */
  followIntent(batchId: string, transferId: string, intentId: string): Promise<void>;
  /** An operator's action (a `cancel`) completed the batch: its completion callback, if it has one. */
  batchCompleted(batchId: string, generation: number): Promise<void>;
  close(): Promise<void>;
};

export function createProducer(options: ProducerOptions): Producer {
  const owned = typeof options.connection === 'string';
  // A producer fails fast (BullMQ's production guide): an enqueue against an unreachable Redis should
  // error out to its caller, not wait forever as a worker's blocking connection does.
  const connection =
    typeof options.connection === 'string'
      ? new Redis(options.connection, { maxRetriesPerRequest: 2, connectTimeout: 5_000 })
      : options.connection;
  if (owned) connection.on('error', () => {});
  let callbacks: Queue | undefined;
  const queues = openTransferQueues(connection, options.prefix, () => {
    const telemetry = transferQueueTelemetry();
    return telemetry ? { telemetry } : {};
  });

  return {
    async followIntent(batchId, transferId, intentId) {
      await followIntent(connection, options.prefix, { batchId, transferId, intentId });
    },
    async batchCompleted(batchId, generation) {
      if (!callbacks) {
        callbacks = new Queue(CALLBACK_QUEUE, queueOptions(connection, options.prefix));
        callbacks.on('error', () => {});
      }
      await addCompletionCallback(callbacks, connection, options.prefix, batchId, generation);
    },
    async addTransfers(batchId, transfers, round = 0) {
      // The request or command that enqueues (docs/traces.md): which batch, how many.
      activeTracing()?.annotate({ [ATTR.batchId]: batchId, [ATTR.transfers]: transfers.length });
      const byChain = new Map<Chain, TransferJobSpec[]>();
      for (const t of transfers) {
        const list = byChain.get(t.from) ?? [];
        list.push(t);
        byChain.set(t.from, list);
      }
      // The chains' bulks go out together, one round trip for all of them rather than one per chain.
      const adds: Promise<unknown>[] = [];
      for (const [chain, list] of byChain) {
        const queue = queues.of(chain);
        for (let i = 0; i < list.length; i += BULK_CHUNK) {
          const jobs = list.slice(i, i + BULK_CHUNK).map((t): NewJob => ({
            id: transferJobId(batchId, t.transferId, round),
            name: transferJobName(t),
            data: { batchId, transferId: t.transferId } satisfies TransferJobData,
            opts: TRANSFER_JOB_OPTIONS,
          }));
          adds.push(addJobsTraced(connection, queue, jobs));
        }
      }
      // Every bulk settles before an error is reported, so none is still running when the caller
      // goes on (a re-run adds whatever is missing: job ids are deterministic).
      const settled = await Promise.allSettled(adds);
      const failed = settled.find((r) => r.status === 'rejected');
      if (failed) throw failed.reason;
    },
    async close() {
      await Promise.all([queues.close(), callbacks?.close()]);
      callbacks = undefined;
      if (owned) await connection.quit().catch(() => connection.disconnect());
    },
  };
}

/**
 * Adds a chunk of waiting transfer jobs (job-hash.ts addWaitingJobs: one script) inside BullMQ's own
 * producer span, as its `addBulk` would (`addBulk transfers-<CHAIN>`, with tracing on: the span's
 * context goes into each job's options, whence the transfer's trace links back; docs/traces.md).
 */
function addJobsTraced(connection: Redis, queue: Queue, jobs: readonly NewJob[]): Promise<unknown> {
  return queue.trace(SpanKind.PRODUCER, 'addBulk', queue.name, async (span, traceContext) => {
    span?.setAttributes({
      [TelemetryAttributes.BulkNames]: jobs.map((j) => j.name),
      [TelemetryAttributes.BulkCount]: jobs.length,
    });
    return await addWaitingJobs(connection, queue, jobs, traceContext);
  });
}
