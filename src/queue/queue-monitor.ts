import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { CHAINS } from '../domain/chains.ts';
import { COUNTED_JOB_STATES, type CountedJobState, type QueueCounts } from '../metrics/queue-counts.ts';
import { INTENT_QUEUE, INTENT_QUEUE_DESCRIPTION } from './intent-failures.ts';
import { queueNameFor } from './jobs.ts';
import { SCHEDULE_QUEUE } from './schedules.ts';

/**
 * Every queue the product uses, for read-only observers (`/metrics`, `/dashboard`). The names of
 * the `intents` and `callbacks` queues are those of intent-failures.ts and callbacks.ts.
 */
export const TRANSFER_QUEUES: readonly string[] = CHAINS.map(queueNameFor);
export const SIDE_QUEUES: readonly string[] = [INTENT_QUEUE, 'callbacks', SCHEDULE_QUEUE];

/** What each queue holds, in words: bull-board shows it under the queue's name. */
export function queueDescription(name: string): string {
  const source = CHAINS.find((c) => queueNameFor(c) === name);
  if (source) {
    return `Payouts from ${source}: one job per transfer and round, named route and amount. Completed = submitted (the result is the outcome). Failed = the transfer ended failed, rejected, needs_review or cancelled (reason: state: code: message); the queue never retries those.`;
  }
  if (name === INTENT_QUEUE) return INTENT_QUEUE_DESCRIPTION;
  if (name === 'callbacks')
    return "Completion callbacks: one POST of the batch's status document each time it completes, retried with backoff.";
  if (name === SCHEDULE_QUEUE)
    return "Schedule firings: each makes one batch from the schedule's stored CSV.";
  return '';
}

export type QueueMonitor = {
  /** Queue handles on the caller's connection (bull-board takes them as they are). */
  readonly queues: readonly Queue[];
  /** Job counts of every queue (one Redis round trip per queue). */
  counts(): Promise<QueueCounts[]>;
  close(): Promise<void>;
};

/**
 * Opens handles on every queue. They add no job, take none, and write nothing: a handle would
 * otherwise record the queue's metadata (`…:meta`) when opened, which is the producers' and
 * workers' business.
 */
export function createQueueMonitor(deps: { connection: Redis; prefix: string }): QueueMonitor {
  const queues = [...TRANSFER_QUEUES, ...SIDE_QUEUES].map((name) => {
    const q = new Queue(name, { connection: deps.connection, prefix: deps.prefix, skipMetasUpdate: true });
    // Errors reach the awaiting caller; this only keeps an 'error' event from crashing the process.
    q.on('error', () => {});
    return q;
  });
  return {
    queues,
    async counts() {
      return await Promise.all(
        queues.map(async (q) => {
          const raw = await q.getJobCounts(...COUNTED_JOB_STATES);
          const counts = {} as Record<CountedJobState, number>;
          for (const s of COUNTED_JOB_STATES) counts[s] = Number(raw[s] ?? 0);
          return { queue: q.name, counts };
        }),
      );
    },
    async close() {
      await Promise.all(queues.map((q) => q.close()));
    },
  };
}
