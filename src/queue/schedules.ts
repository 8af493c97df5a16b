import { createHash } from 'node:crypto';
import { Queue, Worker, type Job, type JobsOptions } from 'bullmq';
import { CronExpressionParser } from 'cron-parser';
import type { Redis } from 'ioredis';
import type { Config } from '../config/config.ts';
import { errorMessage } from '../domain/errors.ts';
import { formatUsdc } from '../domain/money.ts';
import { BatchConflictError, enqueueValidated, type EnqueueOutcome } from '../ingest/enqueue-batch.ts';
import type { HoldConfig } from '../ingest/hold-rules.ts';
import { formatIssue } from '../ingest/ingest-issue.ts';
import { bufferSource } from '../ingest/csv-source.ts';
import { validateCsv, type ValidatedInput } from '../ingest/validate-input.ts';
import type { Logger } from '../log/logger.ts';
import type { TransferJobSink } from '../store/batch-writer.ts';
import { keys } from '../store/keys.ts';
import { heldFirings, noteHeldFiring } from '../store/schedule-holds.ts';
import { fireRebalance, type RebalanceFiringDeps } from '../treasury/rebalance-firing.ts';
import { createProducer, type Producer } from './producer.ts';

/**
 * Recurring batches (README "Using it" `schedule`). A schedule is a record in Redis holding the CSV
 * itself (`P:schedule:<name>`: cron, tz, csv, created_at, created_by, …; names in `P:schedules`),
 * so a firing never depends on the file still existing, plus a BullMQ job scheduler of the same
 * name on the `schedules` queue. BullMQ makes one job per firing (its id carries the firing time),
 * whichever worker process takes it; the batch id is derived from that scheduled time, not from
 * when the job runs, so a job re-run after a crash or taken by another process lands on the same
 * batch, and the batch writer's idempotency makes the second attempt a no-op.
 */
export const SCHEDULE_QUEUE = 'schedules';
export const SCHEDULE_JOB_NAME = 'fire';

/** No `.`: scoped payout ids use it as the separator between the firing and the row id. */
// A firing's batch id is `<name>-<time>`, so a name starts with a letter or digit as batch ids do.
export const SCHEDULE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$/;

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

export type ScheduleSpecCheck = { ok: true; next: number } | { ok: false; message: string };

/** Checks a cron expression (5 fields, or 6 with seconds) and an IANA time zone as BullMQ will use them. */
export function checkScheduleSpec(cron: string, tz: string, now: number = Date.now()): ScheduleSpecCheck {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
  } catch {
    return {
      ok: false,
      message: `unknown time zone "${tz.slice(0, 60)}" (use an IANA name such as Europe/Paris)`,
    };
  }
  if (cron.trim() === '' || cron.length > 200)
    return { ok: false, message: 'the cron expression is empty or too long' };
  try {
    const next = CronExpressionParser.parse(cron, { tz, currentDate: new Date(now) })
      .next()
      .getTime();
    return { ok: true, next };
  } catch (err) {
    return { ok: false, message: `invalid cron expression "${cron.slice(0, 60)}": ${errorMessage(err)}` };
  }
}

/** `NAME-YYYYMMDDTHHMMSSZ`, from the firing's scheduled time in UTC. */
export function firingBatchId(name: string, scheduledAt: number): string {
  const iso = new Date(scheduledAt).toISOString(); // 2025-01-31T02:00:00.000Z
  return `${name}-${iso.slice(0, 19).replace(/[-:]/g, '')}Z`;
}

/** Whether `batchId` is a firing of the schedule `name` (the likely-duplicate rule ignores those). */
export function isFiringOf(name: string, batchId: string): boolean {
  return (
    batchId.length === name.length + 17 &&
    batchId.startsWith(`${name}-`) &&
    /^[0-9]{8}T[0-9]{6}Z$/.test(batchId.slice(name.length + 1))
  );
}

/**
 * The payout id of a row of a firing: `<batchId>.<id>`, so each firing claims (and pays) each row
 * once and the next firing pays again. When that is longer than a payout id may be (64), a digest
 * of the pair replaces the batch id; it starts with `h` and a hex digest followed by `.`, which no
 * `<batchId>.` prefix can (a firing's batch id has `-` right after its name), so the two forms never
 * collide, and the digest covers the whole id, so truncating the readable part loses no uniqueness.
 */
export function scopedPayoutId(batchId: string, id: string): string {
  const full = `${batchId}.${id}`;
  if (full.length <= 64) return full;
  const digest = createHash('sha256').update(`${batchId}/${id}`).digest('hex').slice(0, 24);
  return `h${digest}.${id}`.slice(0, 64);
}

/** The validated rows with their payout ids scoped to the firing (rows without id keep `line-N`). */
export function scopeToFiring(input: ValidatedInput, batchId: string): ValidatedInput {
  return {
    ...input,
    transfers: input.transfers.map((t) => (t.hasPayoutId ? { ...t, id: scopedPayoutId(batchId, t.id) } : t)),
  };
}

export type ScheduleRecord = {
  readonly name: string;
  readonly cron: string;
  readonly tz: string;
  readonly createdAt: number;
  readonly createdBy: string;
  readonly rows: number;
  /** micro-USDC */
  readonly total: bigint;
  readonly lastFiredAt: number | null;
  readonly lastBatch: string | null;
  readonly lastStatus: string | null;
  readonly lastError: string | null;
  /** `rebalance`: each firing plans afresh from a stored rebalancing policy; `csv`: a stored file. */
  readonly kind: 'csv' | 'rebalance';
  /** The stored policy's text (a rebalance schedule), else null. */
  readonly policy: string | null;
  /** The policy file's name as given to `schedule add` (its default policy name comes from it). */
  readonly policyFile: string | null;
};

export type ScheduleInfo = ScheduleRecord & {
  readonly next: number | null;
  /** Firings still held for approval: while there is one, every later firing is held too. */
  readonly heldFirings: readonly string[];
};

function toRecord(name: string, h: Record<string, string>): ScheduleRecord {
  const num = (v: string | undefined) => (v === undefined || v === '' ? null : Number(v));
  return {
    name,
    cron: h['cron'] ?? '',
    tz: h['tz'] ?? 'UTC',
    createdAt: Number(h['created_at'] ?? 0),
    createdBy: h['created_by'] ?? '',
    rows: Number(h['rows'] ?? 0),
    total: BigInt(h['total'] ?? '0'),
    lastFiredAt: num(h['last_fired_at']),
    lastBatch: h['last_batch'] || null,
    lastStatus: h['last_status'] || null,
    lastError: h['last_error'] || null,
    kind: h['policy'] ? 'rebalance' : 'csv',
    policy: h['policy'] || null,
    policyFile: h['policy_file'] || null,
  };
}

/** A queue handle for the schedulers; shares the caller's connection. */
export function openScheduleQueue(connection: Redis, prefix: string): Queue {
  const queue = new Queue(SCHEDULE_QUEUE, { connection, prefix });
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
    now?: number;
  },
): Promise<{ replaced: boolean; next: number | null }> {
  const k = keys(deps.prefix);
  const now = s.now ?? Date.now();
  const [[, existed]] = (await deps.redis
    .multi()
    .exists(k.schedule(s.name))
    // A replacement starts a new history: the last firing shown must be of this definition.
    .del(k.schedule(s.name))
    .hset(k.schedule(s.name), {
      cron: s.cron,
      tz: s.tz,
      ...(s.policy ? { policy: s.policy.text, policy_file: s.policy.file } : { csv: s.csv ?? '' }),
      created_at: String(now),
      created_by: s.createdBy,
      rows: String(s.rows),
      total: s.total.toString(),
    })
    .sadd(k.schedules, s.name)
    .exec()) as [[Error | null, number], ...unknown[]];
  await deps.queue.upsertJobScheduler(
    s.name,
    { pattern: s.cron, tz: s.tz },
    { name: SCHEDULE_JOB_NAME, data: { name: s.name }, opts: FIRING_JOB_OPTIONS },
  );
  const scheduler = await deps.queue.getJobScheduler(s.name);
  return { replaced: existed === 1, next: scheduler?.next ?? null };
}

/** The schedules, by name, with their next firing. */
export async function listSchedules(deps: ScheduleDeps): Promise<ScheduleInfo[]> {
  const k = keys(deps.prefix);
  const names = (await deps.redis.smembers(k.schedules)).sort();
  const out: ScheduleInfo[] = [];
  for (const name of names) {
    const h = await deps.redis.hgetall(k.schedule(name));
    if (!h['cron']) continue;
    const scheduler = await deps.queue.getJobScheduler(name);
    out.push({
      ...toRecord(name, h),
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
  const k = keys(deps.prefix);
  const hadScheduler = await deps.queue.removeJobScheduler(name);
  const [[, deleted]] = (await deps.redis
    .multi()
    .del(k.schedule(name))
    .del(k.scheduleHeld(name))
    .srem(k.schedules, name)
    .exec()) as [[Error | null, number], ...unknown[]];
  return hadScheduler || deleted === 1;
}

export type FiringOutcome =
  | { readonly status: 'no_schedule'; readonly batchId: string }
  | { readonly status: 'conflict'; readonly batchId: string }
  | {
      readonly status: 'enqueued' | 'exists' | 'rejected';
      readonly batchId: string;
      readonly outcome: EnqueueOutcome;
    }
  /** A rebalance schedule's firing: what its run did (README "Treasury rebalancing"). */
  | { readonly status: 'rebalance'; readonly batchId: string; readonly result: string };

/** Sets the `last_*` fields only while the record exists: a firing must not resurrect a removed schedule. */
const SET_IF_EXISTS = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
for i = 1, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 1
`;

export type FireDeps = {
  readonly redis: Redis;
  readonly prefix: string;
  readonly jobs: TransferJobSink;
  readonly config: Pick<Config, 'maxTransferUsdc' | 'maxBatchUsdc' | 'callbackAllowedHosts'> & HoldConfig;
  readonly logger?: Logger | undefined;
  /** What a rebalance schedule's firing needs (keys, RPC, the service's estimates); absent: such firings are refused. */
  readonly rebalance?: RebalanceFiringDeps | undefined;
};

/**
 * One firing: the stored CSV, validated again under today's limits, becomes the batch
 * `NAME-<scheduled time>` through the same path as `enqueue` (batch cap, approval holds, the
 * address book, audit); while an earlier firing is still held, this one is held too.
 * Rows with an id get payout ids scoped to the firing. Rows without one keep the likely-duplicate
 * rule against every other batch of the last 24 hours except the schedule's own firings — the
 * product's "other firings of the same schedule aside" — rather than `--allow-duplicates`, which
 * would also let a firing repeat a payment a person just enqueued by hand.
 */
export async function fireSchedule(
  deps: FireDeps,
  name: string,
  scheduledAt: number,
): Promise<FiringOutcome> {
  const k = keys(deps.prefix);
  const batchId = firingBatchId(name, scheduledAt);
  const [csv, policy, policyFile] = await deps.redis.hmget(k.schedule(name), 'csv', 'policy', 'policy_file');
  const note = async (fields: Record<string, string>) => {
    const flat = Object.entries(fields).flat();
    await deps.redis.eval(SET_IF_EXISTS, 1, k.schedule(name), ...flat);
  };
  if (policy) {
    const result = await fireRebalance(
      { ...deps, rebalance: deps.rebalance },
      { schedule: name, batchId, policyText: policy, policyFile: policyFile ?? name, scheduledAt },
      note,
    );
    return { status: 'rebalance', batchId, result };
  }
  if (csv === null || csv === undefined) return { status: 'no_schedule', batchId };
  const input = await validateCsv(bufferSource(Buffer.from(csv, 'utf8')), {
    maxTransferUsdc: deps.config.maxTransferUsdc,
  });
  const earlier = await heldFirings(deps.redis, deps.prefix, name, { except: batchId });
  let outcome: EnqueueOutcome;
  try {
    outcome = await enqueueValidated(
      { redis: deps.redis, prefix: deps.prefix, jobs: deps.jobs, config: deps.config },
      scopeToFiring(input, batchId),
      {
        source: 'schedule',
        actor: `schedule:${name}`,
        batchId,
        sameFamily: (b) => isFiringOf(name, b),
        holdReasons:
          earlier.length > 0
            ? [
                `schedule ${name}: an earlier firing is still held (${earlier.slice(0, 3).join(', ')}${earlier.length > 3 ? ', …' : ''})`,
              ]
            : undefined,
      },
    );
  } catch (err) {
    if (!(err instanceof BatchConflictError)) throw err;
    // The schedule was replaced while an earlier attempt of this firing had started its batch:
    // that batch stands, and this firing adds nothing (retrying would conflict again).
    deps.logger?.error(
      { schedule: name, batchId },
      'schedule firing conflicts with an existing batch; nothing added',
    );
    await note({
      last_fired_at: String(scheduledAt),
      last_batch: batchId,
      last_status: 'conflict',
      last_error: err.shortMessage,
    });
    return { status: 'conflict', batchId };
  }
  if (outcome.status === 'rejected') {
    const shown = outcome.errors.slice(0, 5).map(formatIssue);
    deps.logger?.error(
      { schedule: name, batchId, problems: outcome.errorCount, first: shown },
      'schedule firing refused: no batch was enqueued',
    );
    await note({
      last_fired_at: String(scheduledAt),
      last_batch: batchId,
      last_status: 'rejected',
      last_error: `${outcome.errorCount} problem(s); ${shown.join('; ')}`.slice(0, 1000),
    });
    return { status: 'rejected', batchId, outcome };
  }
  if (outcome.held) await noteHeldFiring(deps.redis, deps.prefix, name, batchId);
  deps.logger?.info(
    {
      schedule: name,
      batchId,
      created: outcome.created,
      rows: outcome.accepted,
      amount: formatUsdc(outcome.totalAmount),
      held: outcome.held,
    },
    outcome.created ? 'schedule fired: batch enqueued' : 'schedule firing already enqueued',
  );
  await note({
    last_fired_at: String(scheduledAt),
    last_batch: batchId,
    last_status: outcome.held ? 'held' : 'enqueued',
    last_error: '',
  });
  return { status: outcome.created ? 'enqueued' : 'exists', batchId, outcome };
}

/** The firing's scheduled time: BullMQ's `prevMillis`, else the time in the job id `repeat:<name>:<ms>`. */
export function scheduledTimeOf(job: Pick<Job, 'id' | 'opts'>): number | undefined {
  const prev = job.opts.prevMillis;
  if (typeof prev === 'number' && Number.isFinite(prev) && prev > 0) return prev;
  const m = /:([0-9]{10,})$/.exec(job.id ?? '');
  return m ? Number(m[1]) : undefined;
}

export type ScheduleRunnerDeps = {
  readonly redisUrl: string;
  readonly prefix: string;
  /** A normal connection for reads and writes (the runner's blocking connection is its own). */
  readonly redis: Redis;
  readonly config: FireDeps['config'];
  readonly logger: Logger;
  /** Where firing batches add their transfer jobs; by default a producer on `redis`. */
  readonly producer?: TransferJobSink | undefined;
  readonly rebalance?: RebalanceFiringDeps | undefined;
};

export type ScheduleRunner = { close(): Promise<void> };

/** The worker side: takes firing jobs of the `schedules` queue (run by every `usdc-batch worker`). */
export function createScheduleRunner(deps: ScheduleRunnerDeps): ScheduleRunner {
  let own: Producer | undefined;
  const jobs: TransferJobSink =
    deps.producer ?? (own = createProducer({ connection: deps.redis, prefix: deps.prefix }));
  const connection = { url: deps.redisUrl, maxRetriesPerRequest: null };
  const worker = new Worker(
    SCHEDULE_QUEUE,
    async (job: Job) => {
      const data = job.data as { name?: unknown } | null;
      const name = typeof data?.name === 'string' ? data.name : job.repeatJobKey;
      const at = scheduledTimeOf(job);
      if (name === undefined || !SCHEDULE_NAME_PATTERN.test(name) || at === undefined) {
        deps.logger.warn({ jobId: job.id }, 'schedule job without a schedule name or time; ignored');
        return 'ignored';
      }
      const r = await fireSchedule({ ...deps, jobs }, name, at);
      return r.status;
    },
    { connection, prefix: deps.prefix, concurrency: 1 },
  );
  worker.on('error', (err) => deps.logger.warn({ err: { message: err.message } }, 'schedule worker error'));
  worker.on('failed', (job, err) =>
    deps.logger.warn({ jobId: job?.id, err: { message: err.message } }, 'schedule firing failed; will retry'),
  );
  return {
    async close() {
      await worker.close();
      await own?.close();
    },
  };
}
