import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobReportSink, readJobFates, writeJobResult } from '../../src/queue/job-hash.ts';
import { JOB_LOG_LINES } from '../../src/queue/job-reporter.ts';
import { waitFor } from '../helpers/cli.ts';
import { startPrivateRedis, type TestRedis } from '../helpers/redis.ts';

/*
 * job-hash.ts is the only code of ours that writes BullMQ's job keys itself: what it writes is read
 * back here through BullMQ's own API (getJobLogs, Job.progress, Job.returnvalue, Job.failedReason),
 * so a change of BullMQ's layout fails this suite instead of going unnoticed.
 */
describe('job-hash.ts: our writes into BullMQ jobs, read back through BullMQ', () => {
  let redis: TestRedis;
  let client: Redis;
  let queue: Queue;
  const prefix = 'jobhash';

  beforeAll(async () => {
    redis = await startPrivateRedis();
    client = new Redis(redis.url);
    queue = new Queue('transfers-BASE', { connection: { url: redis.url }, prefix });
  });
  afterAll(async () => {
    await queue?.close();
    client?.disconnect();
    await redis?.stop();
  });

  const added = async (id: string): Promise<Job> =>
    await queue.add('BASE→ETH 1.00 USDC', { id }, { jobId: id });

  it('appends report lines to the log, keeps the newest JOB_LOG_LINES, and sets the progress', async () => {
    const job = await added('b/t1');
    const sink = jobReportSink(client, job);
    await sink(['one', 'two'], { step: 'estimate', progress: 10, message: 'asking' });
    expect(await queue.getJobLogs('b/t1')).toEqual({ logs: ['one', 'two'], count: 2 });
    expect((await queue.getJob('b/t1'))?.progress).toEqual({
      step: 'estimate',
      progress: 10,
      message: 'asking',
    });

    const many = Array.from({ length: JOB_LOG_LINES + 5 }, (_, i) => `line ${i}`);
    await sink(many, undefined);
    const { logs, count } = await queue.getJobLogs('b/t1');
    expect(count).toBe(JOB_LOG_LINES);
    expect(logs).toEqual(many.slice(-JOB_LOG_LINES));
    expect((await queue.getJob('b/t1'))?.progress).toMatchObject({ step: 'estimate' });
  });

  it('writes nothing for a job that is gone', async () => {
    const job = await added('b/gone');
    await job.remove();
    await jobReportSink(client, job)(['late'], { step: 'sign', progress: 45, message: '' });
    expect(await writeJobResult(client, job, { state: 'failed' }, 'failed: x')).toBe(false);
    expect(await queue.getJob('b/gone')).toBeUndefined();
    expect((await queue.getJobLogs('b/gone')).logs).toEqual([]);
  });

  it("writes a failing job's result, and a given-up job's reason, as BullMQ reads them", async () => {
    const worker = new Worker(
      'transfers-BASE',
      async (job) => {
        await writeJobResult(client, job, { transfer_id: job.id, state: 'failed' });
        throw new Error('failed: refused: no');
      },
      { connection: { url: redis.url, maxRetriesPerRequest: null }, prefix },
    );
    try {
      await added('b/t2');
      await waitFor('the job to fail', async () => (await queue.getJobState('b/t2')) === 'failed');
      const job = (await queue.getJob('b/t2')) as Job;
      expect(job.returnvalue).toEqual({ transfer_id: 'b/t2', state: 'failed' });
      expect(job.failedReason).toBe('failed: refused: no');
      expect(await writeJobResult(client, job, { state: 'needs_review' }, 'needs_review: stalled: x')).toBe(
        true,
      );
      const again = (await queue.getJob('b/t2')) as Job;
      expect(again.returnvalue).toEqual({ state: 'needs_review' });
      expect(again.failedReason).toBe('needs_review: stalled: x');
    } finally {
      await worker.close();
    }
  });

  it("reads the sweeper's job fates as BullMQ's own states say", async () => {
    const fates = new Queue('fates', { connection: { url: redis.url }, prefix });
    const worker = new Worker(
      'fates',
      async (job) => {
        if (job.data.fail) throw new Error('no');
        return 'ok';
      },
      { connection: { url: redis.url, maxRetriesPerRequest: null }, prefix },
    );
    try {
      await fates.add('done', { fail: false }, { jobId: 'done' });
      await fates.add('bad', { fail: true }, { jobId: 'bad' });
      await waitFor('both jobs to finish', async () => {
        const states = await Promise.all([fates.getJobState('done'), fates.getJobState('bad')]);
        return states[0] === 'completed' && states[1] === 'failed';
      });
      await worker.close();
      await fates.add('waiting', {}, { jobId: 'waiting' });
      await fates.add('later', {}, { jobId: 'later', delay: 60_000 });
      expect([
        await fates.getJobState('waiting'),
        await fates.getJobState('later'),
        await fates.getJobState('nothing'),
      ]).toEqual(['waiting', 'delayed', 'unknown']);
      const ids = ['done', 'bad', 'waiting', 'later', 'nothing'];
      expect(
        await readJobFates(
          client,
          ids.map((jobId) => ({ queue: fates, jobId })),
        ),
      ).toEqual(['finished', 'failed', 'live', 'live', 'missing']);
    } finally {
      await worker.close();
      await fates.close();
    }
  });
});
