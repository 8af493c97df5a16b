import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '../log/logger.ts';
import type { TransferStore } from '../store/transfer-store.ts';
import { writeJobResult } from './job-hash.ts';
import { finalFailure } from './job-outcome.ts';
import { JOB_LOG_LINES } from './job-reporter.ts';
import { queueOptions, workerConnection } from './queue-options.ts';
import type { RedisEndpoint } from '../store/redis-endpoint.ts';

/*
 * The `intents` queue: a failed job for each intent that ended `failed` after its transfer was
 * submitted — the service took the USDC and did not deliver it — so ops see it in bull-board's failed
 * set (docs/data-model.md "Following intents"). Intents that settle well get no job: the follower
 * (intent-follower.ts) keeps them in the `P:follow` set, and what it learns in the transfer record.
 */

export const INTENT_QUEUE = 'intents';

export const INTENT_QUEUE_DESCRIPTION =
  "Intents that ended failed after their transfer was submitted (the service took the USDC and did not deliver it), one failed job each. Intents are followed on the service's status route outside BullMQ (the P:follow set); only a failed one gets a job here.";

/** A failed-intent job's data: pointers only, and how long after submit the intent was seen failed. */
export type FailedIntentData = { batchId: string; transferId: string; intentId: string; followedMs: number };

type IntentRef = Pick<FailedIntentData, 'batchId' | 'transferId' | 'intentId'>;

/**
 * A failed-intent job's result: the status the follower saw last and how it stopped following
 * (`final`), and how long after submit it saw it.
 */
export type FollowResult = {
  readonly batch_id: string;
  readonly transfer_id: string;
  readonly intent_id: string;
  readonly intent_status: string;
  readonly ended: 'final';
  readonly followed_s: number;
};

/** `<batchId>/<transferId>/<intentId with : → _>` (BullMQ job ids may not hold `:`). */
export function failedIntentJobId(t: IntentRef): string {
  return `${t.batchId}/${t.transferId}/${t.intentId.replaceAll(':', '_')}`;
}

/** Adds the failed-intent job (one that exists is left as it is: the id is the intent's). */
export async function addFailedIntentJob(queue: Queue, t: IntentRef, followedMs: number): Promise<void> {
  await queue.add(
    `intent ${t.intentId}`,
    {
      batchId: t.batchId,
      transferId: t.transferId,
      intentId: t.intentId,
      followedMs,
    } satisfies FailedIntentData,
    {
      jobId: failedIntentJobId(t),
      attempts: 1,
      removeOnComplete: true,
      removeOnFail: { age: 7 * 24 * 3600 },
      keepLogs: JOB_LOG_LINES,
    },
  );
}

type FailureDeps = {
  readonly endpoint: RedisEndpoint;
  readonly prefix: string;
  readonly redis: Redis;
  readonly store: TransferStore;
  readonly logger: Logger;
};

/** The queue that failed-intent jobs are added to, and the worker that fails them. */
export function createIntentFailures(deps: FailureDeps) {
  const { connection, close } = workerConnection(deps.endpoint);
  const queue = new Queue(INTENT_QUEUE, queueOptions(connection, deps.prefix));
  queue.on('error', (err) => deps.logger.warn({ err: { message: err.message } }, 'intent queue error'));
  const worker = new Worker(INTENT_QUEUE, (job: Job) => failIntentJob(deps, job), {
    connection,
    prefix: deps.prefix,
    concurrency: 1,
  });
  worker.on('error', (err) => deps.logger.warn({ err: { message: err.message } }, 'intent worker error'));
  return {
    queue,
    async close(): Promise<void> {
      await worker.close();
      await queue.close();
      await close();
    },
  };
}
export type IntentFailures = ReturnType<typeof createIntentFailures>;

function parseData(data: unknown): FailedIntentData | undefined {
  const d = data as Partial<FailedIntentData> | null;
  if (
    !d ||
    typeof d.batchId !== 'string' ||
    typeof d.transferId !== 'string' ||
    typeof d.intentId !== 'string'
  ) {
    return undefined;
  }
  return {
    batchId: d.batchId,
    transferId: d.transferId,
    intentId: d.intentId,
    followedMs: Number(d.followedMs ?? 0),
  };
}

/**
 * The processor: logs that the intent is failed, writes the job's result and fails the job (never
 * retried), so it stays in `P:intents:failed` a week with the reason naming the transfer.
 */
async function failIntentJob(deps: FailureDeps, job: Job): Promise<never> {
  const data = parseData(job.data);
  if (!data) throw finalFailure('invalid: job data is not a failed intent');
  await job.log(`${new Date().toISOString()} final: intent ${data.intentId} is failed`);
  const result: FollowResult = {
    batch_id: data.batchId,
    transfer_id: data.transferId,
    intent_id: data.intentId,
    intent_status: 'failed',
    ended: 'final',
    followed_s: Math.round(data.followedMs / 1000),
  };
  await writeJobResult(deps.redis, job, result);
  const rec = await deps.store.load(data.batchId, data.transferId);
  const route = rec ? ` (${rec.from}→${rec.to}, ${rec.recipient})` : '';
  throw finalFailure(
    `intent_failed: intent ${data.intentId} of transfer ${data.batchId}/${data.transferId}${route} ended failed after it was submitted: the service took the USDC and did not deliver it; check the chain and the service`,
  );
}
