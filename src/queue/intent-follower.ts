import { DelayedError, Queue, Worker, type Job } from 'bullmq';
import { FINAL_INTENT_STATUSES } from '../domain/transfer.ts';
import type { Logger } from '../log/logger.ts';
import type { ServiceClient } from '../service/types.ts';
import type { TransferStore } from '../store/transfer-store.ts';

export const INTENT_QUEUE = 'intents';
/** Polls per intent: with the delays below, about 45 minutes of following at most. */
const MAX_POLLS = 45;

type FollowData = { batchId: string; transferId: string; intentId: string; polls: number };

function parse(data: unknown): FollowData | undefined {
  const d = data as Partial<FollowData> | null;
  if (
    !d ||
    typeof d.batchId !== 'string' ||
    typeof d.transferId !== 'string' ||
    typeof d.intentId !== 'string'
  ) {
    return undefined;
  }
  return { batchId: d.batchId, transferId: d.transferId, intentId: d.intentId, polls: Number(d.polls ?? 0) };
}

/**
 * Adds the job that follows one submitted intent (a job that exists is left as it is): the worker's
 * follower after a send, the producer after an operator's `resolve --submitted`.
 */
export async function addFollowJob(
  queue: Queue,
  target: { batchId: string; transferId: string; intentId: string },
  firstDelayMs: number = delayFor(0),
): Promise<void> {
  const data: FollowData = { ...target, polls: 0 };
  await queue.add('follow', data, {
    jobId: `${target.batchId}/${target.transferId}/${target.intentId.replaceAll(':', '_')}`,
    delay: firstDelayMs,
    removeOnComplete: { age: 24 * 3600, count: 10_000 },
    removeOnFail: { age: 7 * 24 * 3600 },
  });
}

// The first poll waits 15 s: an intent is rarely further than `pending` sooner, and polls during a
// batch compete with payments for the service and the CPU. Then 30 s, then every 60 s.
function delayFor(polls: number): number {
  return Math.min(60_000, 15_000 * 2 ** Math.min(polls, 5));
}

/**
 * Follows submitted intents on the service's status route (`GET /sdk/v1/status/{id}`) until a final
 * status, recording it as `intent_status` (and the batch's settlement counters with it). A 404
 * stops the following of that intent and marks it untracked. Polling has its own queue so it never
 * takes a slot from a payment.
 */
export function createIntentFollower(deps: {
  redisUrl: string;
  prefix: string;
  service: ServiceClient;
  store: TransferStore;
  logger: Logger;
  concurrency?: number;
  /** Delay before poll `n` (0-based); tests shorten it. */
  delayFor?: (polls: number) => number;
}) {
  const delay = deps.delayFor ?? delayFor;
  const connection = { url: deps.redisUrl, maxRetriesPerRequest: null };
  const queue = new Queue(INTENT_QUEUE, { connection, prefix: deps.prefix });
  queue.on('error', (err) => deps.logger.warn({ err: { message: err.message } }, 'intent queue error'));

  const worker = new Worker(
    INTENT_QUEUE,
    async (job: Job, token?: string) => {
      const data = parse(job.data);
      if (!data) return 'invalid';
      let status: string | undefined;
      try {
        const res = await deps.service.getIntentStatus(data.intentId);
        if (res === undefined) {
          // The service has no status route (or no record) for it: its settlement can never be
          // known here, which the batch's `settled` says as null rather than waiting forever.
          await deps.store.saveIntentStatus(data.batchId, data.transferId, data.intentId, {
            untracked: true,
          });
          return 'not_found';
        }
        status = res.status;
      } catch (err) {
        deps.logger.debug(
          { err: { message: (err as Error).message }, intentId: data.intentId },
          'status poll failed',
        );
      }
      if (status !== undefined) {
        // Recorded only while the transfer still names this intent (checked in the same step).
        await deps.store.saveIntentStatus(data.batchId, data.transferId, data.intentId, { status });
        if ((FINAL_INTENT_STATUSES as readonly string[]).includes(status)) return status;
      }
      if (data.polls + 1 >= MAX_POLLS) return 'gave_up';
      await job.updateData({ ...data, polls: data.polls + 1 });
      await job.moveToDelayed(Date.now() + delay(data.polls + 1), token);
      throw new DelayedError();
    },
    { connection, prefix: deps.prefix, concurrency: deps.concurrency ?? 8 },
  );
  worker.on('error', (err) => deps.logger.warn({ err: { message: err.message } }, 'intent worker error'));

  return {
    async follow(batchId: string, transferId: string, intentId: string): Promise<void> {
      await addFollowJob(queue, { batchId, transferId, intentId }, delay(0));
    },
    async close(): Promise<void> {
      await worker.close();
      await queue.close();
    },
  };
}
export type IntentFollower = ReturnType<typeof createIntentFollower>;
