import { optsEncodeMap, type Job, type JobsOptions, type Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { loadLuaScript, runScript } from '../store/lua-script.ts';
import { JOB_LOG_LINES, type JobReportSink } from './job-reporter.ts';

/*
 * The only code of ours that writes BullMQ's job keys itself (docs/data-model.md "BullMQ jobs"):
 * everything else goes through BullMQ's API. Three writes save commands or say what the API cannot:
 * the ingest's new transfer jobs (a chunk in one script of about 2 commands a job, where `addBulk`
 * runs a script of 10 per job), a run's report (log lines and progress in one round trip, where
 * BullMQ's API takes a script per line and one for the progress), and the result of a job about to
 * fail (BullMQ keeps a return value for a completed job only). Two reads save commands: the intent follower's look at a finished job
 * before it adds its line through BullMQ's `addJobLog` (one HMGET, where `getJob` reads the whole
 * hash), and the sweeper's look at a page of jobs (one or two reads per job, where the API takes a
 * getJob per job).
 * test/integration/job-hash.test.ts checks each against BullMQ's API, so a change of BullMQ's layout
 * fails the suite.
 */

const SCRIPTS = new URL('./scripts/', import.meta.url);
const WRITE_REPORT = loadLuaScript(SCRIPTS, 'job-report-write.lua');
const WRITE_RESULT = loadLuaScript(SCRIPTS, 'job-result-write.lua');
const ADD_JOBS = loadLuaScript(SCRIPTS, 'transfer-jobs-add.lua');

/** The job as these writes need it: where BullMQ keeps it. */
export type JobPlace = Pick<Job, 'queueQualifiedName' | 'id'>;

/** A job by its queue and id (the key named by BullMQ's own `toKey`). */
export type JobAt = { readonly queue: Pick<Queue, 'toKey'>; readonly jobId: string };

/** The Redis key of a job's hash (`<prefix>:<queue>:<job id>`), as BullMQ names it. */
function jobKeyOf(job: JobPlace): string {
  return `${job.queueQualifiedName}:${job.id ?? ''}`;
}

/** A waiting job to add: its id (BullMQ's `jobId`, which its options need not repeat), name, data and options. */
export type NewJob = {
  readonly id: string;
  readonly name: string;
  readonly data: unknown;
  readonly opts: JobsOptions;
};

/**
 * Adds waiting jobs to `queue` in one script (transfer-jobs-add.lua), as BullMQ's `addBulk` would
 * store them — none may have a delay, a priority, a parent or deduplication — except for the
 * queue's event stream, which gets no `added`/`waiting` entries. A job whose id exists is left as it
 * is. `traceContext` is the producer span's context (BullMQ's telemetry metadata), kept in each
 * job's options as BullMQ keeps it (`tm`). Returns how many were added.
 */
export async function addWaitingJobs(
  redis: Redis,
  queue: Pick<Queue, 'toKey'>,
  jobs: readonly NewJob[],
  traceContext?: string,
): Promise<number> {
  if (jobs.length === 0) return 0;
  const args: string[] = ['', String(Date.now())];
  for (const job of jobs) {
    const opts = {
      ...job.opts,
      jobId: job.id,
      ...(traceContext ? { telemetry: { metadata: traceContext } } : {}),
    };
    args.push(job.id, job.name, JSON.stringify(job.data), JSON.stringify(storedOptions(opts)));
  }
  // Every job hash in KEYS: a script declares every key it touches (Redis Cluster).
  const keys = [
    queue.toKey('wait'),
    queue.toKey('meta'),
    queue.toKey('active'),
    queue.toKey('marker'),
    ...jobs.map((job) => queue.toKey(job.id)),
  ];
  return Number(await runScript(redis, ADD_JOBS, keys, args));
}

/** Options that make a job something else than a plain waiting one (BullMQ's other add scripts). */
const NOT_WAITING = new Set([
  'delay',
  'priority',
  'lifo',
  'parent',
  'deduplication',
  'debounce',
  'repeat',
  'repeatJobKey',
]);

/**
 * A job's options as BullMQ stores them in the job hash's `opts` (its `optsAsJSON`): the options
 * BullMQ abbreviates under their short names (`optsEncodeMap`), the telemetry's context as `tm`.
 */
function storedOptions(opts: JobsOptions): Record<string, unknown> {
  const stored: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(opts)) {
    if (value === undefined) continue;
    if (NOT_WAITING.has(name)) throw new Error(`addWaitingJobs cannot add a job with the option ${name}`);
    if (name === 'telemetry') {
      const t = value as NonNullable<JobsOptions['telemetry']>;
      if (t.metadata !== undefined) stored['tm'] = t.metadata;
      if (t.omitContext !== undefined) stored['omc'] = t.omitContext;
    } else {
      stored[(optsEncodeMap as Record<string, string>)[name] ?? name] = value;
    }
  }
  return stored;
}

/**
 * The sink of a transfer job's reporter (job-reporter.ts): the lines said since the last write go
 * to the job's log (the newest JOB_LOG_LINES kept, as BullMQ's `keepLogs`), the newest progress to
 * the job, in one script and only while the job exists.
 */
export function jobReportSink(redis: Redis, job: JobPlace): JobReportSink {
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
 * Writes a job's result into its hash while the job exists: `returnvalue` always, `failedReason`
 * too when given — for a job the queue itself gave up on (stalled too often) whose transfer was then
 * made final, so its reason names the transfer's state. For a job about to fail (BullMQ's own
 * `returnvalue` is a completed job's). Returns false when the job is gone.
 */
export async function writeJobResult(
  redis: Redis,
  job: JobPlace,
  result: unknown,
  failedReason = '',
): Promise<boolean> {
  return (
    (await runScript(redis, WRITE_RESULT, [jobKeyOf(job)], [JSON.stringify(result), failedReason])) === 1
  );
}

/**
 * What became of a line for a finished job: `logged`; `missing` (no job hash); `unfinished` (no
 * `finishedOn` or no result yet); `refused` (its result is not the one `accepts` asks for).
 */
export type FinishedJobLine = 'logged' | 'missing' | 'unfinished' | 'refused';

/** A job by its queue and id, the queue able to add a line to its log (BullMQ's `addJobLog`). */
export type LoggableJobAt = {
  readonly queue: Pick<Queue, 'toKey' | 'addJobLog'>;
  readonly jobId: string;
};

/**
 * Appends `line` to the log of a job that has finished with a result `accepts` (the parsed
 * `returnvalue`, as BullMQ's Job reads it). The look is one HMGET where BullMQ's `getJob` reads the
 * whole hash; the line goes through BullMQ's own `addJobLog` (docs/data-model.md "Transfer job
 * hash"), untrimmed: a finished job has no more report lines, so it is at most one beyond the
 * JOB_LOG_LINES kept.
 */
export async function logOnFinishedJob(
  redis: Redis,
  job: LoggableJobAt,
  line: string,
  accepts: (result: unknown) => boolean,
): Promise<FinishedJobLine> {
  const key = job.queue.toKey(job.jobId);
  const [timestamp, finishedOn, returnvalue] = await redis.hmget(
    key,
    'timestamp',
    'finishedOn',
    'returnvalue',
  );
  // BullMQ sets `timestamp` when it adds a job: a hash without it is no job (getJob's empty hash).
  if (timestamp === null || timestamp === undefined) return 'missing';
  const result = typeof returnvalue === 'string' ? parsedResult(returnvalue) : undefined;
  if (!Number(finishedOn) || result === null || result === undefined) return 'unfinished';
  if (!accepts(result)) return 'refused';
  // BullMQ's script answers -1 when the job was removed since the look (nothing written then).
  return (await job.queue.addJobLog(job.jobId, line)) < 0 ? 'missing' : 'logged';
}

/** A `returnvalue` as BullMQ's Job parses it: JSON, or undefined when it does not parse. */
function parsedResult(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * What became of a job, as the sweeper needs it: `live` (waiting, delayed or active: no
 * `finishedOn`), `finished` (completed), `failed` (in the queue's failed set), `missing` (no job
 * hash: never added, or removed).
 */
export type JobFate = 'live' | 'failed' | 'finished' | 'missing';

/**
 * The fates of a page of jobs: one pipeline of an HMGET per job (`timestamp`, which BullMQ sets
 * when it adds a job, tells a job from `missing`; `finishedOn` tells `live`), then, for the
 * finished ones only, one of a ZSCORE in the queue's failed set (keys named by BullMQ's `toKey`).
 */
export async function readJobFates(redis: Redis, jobs: readonly JobAt[]): Promise<JobFate[]> {
  if (jobs.length === 0) return [];
  const read = redis.pipeline();
  for (const { queue, jobId } of jobs) read.hmget(queue.toKey(jobId), 'timestamp', 'finishedOn');
  const hashes = ((await read.exec()) ?? []).map(([err, v]) => {
    if (err) throw err;
    return v as (string | null)[];
  });
  const fates: JobFate[] = hashes.map(([timestamp, finishedOn]) =>
    timestamp === null || timestamp === undefined ? 'missing' : finishedOn ? 'finished' : 'live',
  );
  const finished = jobs.filter((_, i) => fates[i] === 'finished');
  if (finished.length === 0) return fates;
  const failedSet = redis.pipeline();
  for (const { queue, jobId } of finished) failedSet.zscore(queue.toKey('failed'), jobId);
  const scores = (await failedSet.exec()) ?? [];
  let n = 0;
  return fates.map((fate) => {
    if (fate !== 'finished') return fate;
    const [err, score] = scores[n++] ?? [];
    if (err) throw err;
    return score !== null && score !== undefined ? 'failed' : 'finished';
  });
}
