import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { TransferRoad } from '../domain/roads.ts';
import {
  deleteScheduleRecord,
  readScheduleRecord,
  scheduleNames,
  writeScheduleRecord,
  type ScheduleRecord,
} from '../store/schedule-records.ts';
import { heldFirings } from '../store/schedule-holds.ts';
import { queueOptions } from './queue-options.ts';

/**
 * Recurring batches (docs/operating.md "Operations", schedules). A schedule is a record in Redis holding the CSV
 * itself (`P:schedule:<name>`: cron, tz, csv, created_at, created_by, …; names in `P:schedules`),
 * so a firing never depends on the file still existing, plus a BullMQ job scheduler of the same
 * name on the `schedules` queue. BullMQ makes one job per firing (its id carries the firing time),
 * whichever worker process takes it; the batch id is derived from that scheduled time, not from
 * when the job runs, so a job re-run after a crash or taken by another process lands on the same
 * batch, and the batch writer's idempotency makes the second attempt a no-op.
 */
export const SCHEDULE_QUEUE = 'schedules';
export const SCHEDULE_JOB_NAME = 'fire';

/**
 * A firing that fails on Redis is retried by the queue (the same scheduled time, so the same batch);
 * a firing whose rows are refused is not (it would be refused again) and says so in the log and in
 * the schedule's `last_*` fields.
 */
const FIRING_JOB_OPTIONS = {
  attempts: 8,
  backoff: { type: 'exponential', delay: 1_000 },
  removeOnComplete: { age: 7 * 24 * 3600, count: 1_000 },
  removeOnFail: { age: 30 * 24 * 3600, count: 1_000 },
} as const satisfies JobsOptions;

export type ScheduleInfo = ScheduleRecord & {
  readonly next: number | null;
  /** Firings still held for approval: while there is one, every later firing is held too. */
  readonly heldFirings: readonly string[];
};

/** A queue handle for the schedulers; shares the caller's connection. */
export function openScheduleQueue(connection: Redis, prefix: string): Queue {
  const queue = new Queue(SCHEDULE_QUEUE, queueOptions(connection, prefix));
  // Errors reach the awaiting caller; this only keeps an 'error' event from crashing the process.
  queue.on('error', () => {});
  return queue;
}

export type ScheduleDeps = { readonly redis: Redis; readonly prefix: string; readonly queue: Queue };

/**
 * Stores the schedule (the record first, then the scheduler: a scheduler never fires without its
 * record) and adds or replaces its job scheduler. Returns whether it replaced one and the next firing.
 */
export async function putSchedule(
  deps: ScheduleDeps,
  s: {
    name: string;
    cron: string;
    tz: string;
    /** The CSV of a file schedule… */
    csv?: string;
    /** …or the text and file name of a rebalancing policy. */
    policy?: { text: string; file: string };
    createdBy: string;
    rows: number;
    total: bigint;
    /** A CSV schedule's road; absent: TRANSFER_VIA at each firing. */
    via?: TransferRoad | undefined;
    now?: number;
  },
): Promise<{ replaced: boolean; next: number | null }> {
  const replaced = await writeScheduleRecord(deps.redis, deps.prefix, {
    name: s.name,
    cron: s.cron,
    tz: s.tz,
    csv: s.csv,
    policy: s.policy,
    createdAt: s.now ?? Date.now(),
    createdBy: s.createdBy,
    rows: s.rows,
    total: s.total,
    via: s.via,
  });
  await deps.queue.upsertJobScheduler(
    s.name,
    { pattern: s.cron, tz: s.tz },
    { name: SCHEDULE_JOB_NAME, data: { name: s.name }, opts: FIRING_JOB_OPTIONS },
  );
  const scheduler = await deps.queue.getJobScheduler(s.name);
  return { replaced, next: scheduler?.next ?? null };
}

/** The schedules, by name, with their next firing. */
export async function listSchedules(deps: ScheduleDeps): Promise<ScheduleInfo[]> {
  const names = await scheduleNames(deps.redis, deps.prefix);
  const out: ScheduleInfo[] = [];
  for (const name of names) {
    const record = await readScheduleRecord(deps.redis, deps.prefix, name);
    if (record === undefined) continue;
    const scheduler = await deps.queue.getJobScheduler(name);
    out.push({
      ...record,
      next: scheduler?.next ?? null,
      heldFirings: await heldFirings(deps.redis, deps.prefix, name),
    });
  }
  return out;
}

/**
 * Removes the scheduler (and its next delayed job), then the record. A firing job already waiting
 * finds no record and makes no batch; one already past that point finishes its batch.
 */
export async function removeSchedule(deps: ScheduleDeps, name: string): Promise<boolean> {
  const hadScheduler = await deps.queue.removeJobScheduler(name);
  const deleted = await deleteScheduleRecord(deps.redis, deps.prefix, name);
  return hadScheduler || deleted;
}
