import type { Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { loadLuaScript, runScript } from '../store/lua-script.ts';
import { JOB_LOG_LINES, type JobReportSink } from './job-reporter.ts';

/*
 * The only code of ours that writes BullMQ's job keys itself (docs/data-model.md "BullMQ jobs"):
 * everything else goes through BullMQ's API. Two writes save commands or say what the API cannot:
 * a run's report (log lines and progress in one round trip, where BullMQ's API takes a script per
 * line and one for the progress), and the result of a job about to fail (BullMQ keeps a return value
 * for a completed job only); one read saves commands: the sweeper's look at a page of jobs (one
 * pipeline, where the API takes a getJob per job). test/integration/job-hash.test.ts checks each
 * against BullMQ's API, so a change of BullMQ's layout fails the suite.
 */

const SCRIPTS = new URL('./scripts/', import.meta.url);
const WRITE_REPORT = loadLuaScript(SCRIPTS, 'job-report-write.lua');
const WRITE_RESULT = loadLuaScript(SCRIPTS, 'job-result-write.lua');

/** The job as these writes need it: where BullMQ keeps it. */
export type JobPlace = Pick<Job, 'queueQualifiedName' | 'id'>;

/** The Redis key of a job's hash (`<prefix>:<queue>:<job id>`), as BullMQ names it. */
function jobKeyOf(job: JobPlace): string {
  return `${job.queueQualifiedName}:${job.id ?? ''}`;
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
 * What became of a job, as the sweeper needs it: `live` (waiting, delayed or active: no
 * `finishedOn`), `finished` (completed), `failed` (in the queue's failed set), `missing` (no job
 * hash: never added, or removed).
 */
export type JobFate = 'live' | 'failed' | 'finished' | 'missing';

/** The fates of a page of jobs, in one pipeline of three reads per job (keys named by BullMQ's `toKey`). */
export async function readJobFates(
  redis: Redis,
  jobs: readonly { readonly queue: Pick<Queue, 'toKey'>; readonly jobId: string }[],
): Promise<JobFate[]> {
  if (jobs.length === 0) return [];
  const pipe = redis.pipeline();
  for (const { queue, jobId } of jobs) {
    pipe.exists(queue.toKey(jobId));
    pipe.hget(queue.toKey(jobId), 'finishedOn');
    pipe.zscore(queue.toKey('failed'), jobId);
  }
  const res = (await pipe.exec()) ?? [];
  return jobs.map((_, i) => {
    const [exists, finishedOn, failed] = [0, 1, 2].map((j) => res[i * 3 + j]?.[1]);
    if (exists !== 1) return 'missing';
    if (!finishedOn) return 'live';
    return failed !== null && failed !== undefined ? 'failed' : 'finished';
  });
}
