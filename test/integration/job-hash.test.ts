import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addWaitingJobs,
  jobReportSink,
  logOnFinishedJob,
  readJobFates,
  writeJobResult,
  type NewJob,
} from '../../src/queue/job-hash.ts';
import { JOB_LOG_LINES } from '../../src/queue/job-reporter.ts';
import { TRANSFER_JOB_OPTIONS } from '../../src/queue/producer.ts';
import { waitFor } from '../helpers/cli.ts';
import { startPrivateRedis, type TestRedis } from '../helpers/redis.ts';

/*
 * job-hash.ts is the only code of ours that writes BullMQ's job keys itself: what it writes is read
 * back here through BullMQ's own API (getJobLogs, Job.progress, Job.returnvalue, Job.failedReason,
 * getJobState, a Worker), and the jobs it adds are compared with the same jobs added by BullMQ's
 * `addBulk`, so a change of BullMQ's layout fails this suite instead of going unnoticed.
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

  it("adds a line to a finished job whose result it accepts, as BullMQ's getJobLogs reads it", async () => {
    const lines = new Queue('lines', { connection: { url: redis.url }, prefix });
    const worker = new Worker(
      'lines',
      async (job) => {
        if (job.data.say) await jobReportSink(client, job)(job.data.say, undefined);
        if (job.data.fail) {
          await writeJobResult(client, job, { intent_id: 'int-f' });
          throw new Error('no');
        }
        return { intent_id: job.data.intent };
      },
      { connection: { url: redis.url, maxRetriesPerRequest: null }, prefix },
    );
    const full = Array.from({ length: JOB_LOG_LINES }, (_, i) => `line ${i}`);
    try {
      await lines.add('x', { intent: 'int-a', say: full }, { jobId: 'said' });
      await lines.add('x', { intent: 'int-b' }, { jobId: 'quiet' });
      await lines.add('x', { fail: true }, { jobId: 'refusing' });
      await waitFor('the jobs to finish', async () => {
        const states = await Promise.all(['said', 'quiet', 'refusing'].map((id) => lines.getJobState(id)));
        return states.join() === 'completed,completed,failed';
      });
      await worker.close();
      await lines.add('x', {}, { jobId: 'waiting' });
      const at = (jobId: string) => ({ queue: lines, jobId });
      const names = (intent: string) => (result: unknown) =>
        (result as { intent_id?: unknown }).intent_id === intent;

      // A full log gets the line as one more beyond the lines kept; a job that never logged gets its first.
      expect(await logOnFinishedJob(client, at('said'), 'intent complete', names('int-a'))).toBe('logged');
      expect(await lines.getJobLogs('said')).toEqual({
        logs: [...full, 'intent complete'],
        count: JOB_LOG_LINES + 1,
      });
      expect(await logOnFinishedJob(client, at('quiet'), 'intent failed', names('int-b'))).toBe('logged');
      expect(await lines.getJobLogs('quiet')).toEqual({ logs: ['intent failed'], count: 1 });
      // A failed job's result, written by writeJobResult, counts as BullMQ's Job.returnvalue does.
      expect(await logOnFinishedJob(client, at('refusing'), 'intent complete', names('int-f'))).toBe(
        'logged',
      );
      expect((await lines.getJobLogs('refusing')).logs).toEqual(['intent complete']);
      // A line logged again (a crash before the intent left the follow set) is one more line.
      expect(await logOnFinishedJob(client, at('said'), 'intent complete again', names('int-a'))).toBe(
        'logged',
      );
      expect((await lines.getJobLogs('said')).logs).toEqual([
        ...full,
        'intent complete',
        'intent complete again',
      ]);

      // Nothing written to a job whose result is another's, one not finished, or one that is not there.
      expect(await logOnFinishedJob(client, at('quiet'), 'no', names('int-other'))).toBe('refused');
      expect(await logOnFinishedJob(client, at('waiting'), 'no', names('int-a'))).toBe('unfinished');
      expect(await lines.getJobState('waiting')).toBe('waiting');
      expect(await logOnFinishedJob(client, at('nothing'), 'no', names('int-a'))).toBe('missing');
      expect((await lines.getJobLogs('quiet')).logs).toEqual(['intent failed']);
      expect((await lines.getJobLogs('waiting')).count).toBe(0);
      expect(await lines.getJob('nothing')).toBeUndefined();
      expect(await client.exists(`${lines.toKey('nothing')}:logs`)).toBe(0);
    } finally {
      await worker.close();
      await lines.close();
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

  describe('addWaitingJobs', () => {
    const jobs = (ids: string[]): NewJob[] =>
      ids.map((id, i) => ({
        id,
        name: `BASE→ARB ${i + 1}.00 USDC`,
        data: { batchId: 'b', transferId: id },
        opts: TRANSFER_JOB_OPTIONS,
      }));
    /** The same jobs through BullMQ's own addBulk, with the producer span's context as BullMQ keeps it. */
    const addBulk = (q: Queue, list: NewJob[], tm?: string) =>
      q.addBulk(
        list.map((j) => ({
          name: j.name,
          data: j.data,
          opts: { ...j.opts, jobId: j.id, ...(tm ? { telemetry: { metadata: tm } } : {}) },
        })),
      );
    const hashOf = async (q: Queue, id: string) => {
      const h = await client.hgetall(q.toKey(id));
      const { timestamp, opts, ...rest } = h;
      return { ...rest, opts: JSON.parse(opts ?? 'null') as unknown, timestamped: Number(timestamp) > 0 };
    };
    const open = (name: string) => new Queue(name, { connection: { url: redis.url }, prefix });

    it("stores each job as BullMQ's addBulk does, in the same wait order, and leaves an existing id alone", async () => {
      const bull = open('add-bull');
      const ours = open('add-ours');
      try {
        const ids = ['b/t1', 'b/t2', 'b/t3'];
        await addBulk(bull, jobs(ids), '{"traceparent":"00-abc"}');
        expect(await addWaitingJobs(client, ours, jobs(ids), '{"traceparent":"00-abc"}')).toBe(3);
        for (const id of ids) expect(await hashOf(ours, id)).toEqual(await hashOf(bull, id));
        expect((await hashOf(ours, 'b/t1')).opts).toMatchObject({
          jobId: 'b/t1',
          tm: '{"traceparent":"00-abc"}',
        });
        expect(await client.lrange(ours.toKey('wait'), 0, -1)).toEqual(
          await client.lrange(bull.toKey('wait'), 0, -1),
        );
        // The marker a waiting worker blocks on, as BullMQ sets it.
        expect(await client.zrange(ours.toKey('marker'), 0, -1, 'WITHSCORES')).toEqual(['0', '0']);
        expect(await client.zrange(bull.toKey('marker'), 0, -1, 'WITHSCORES')).toEqual(['0', '0']);
        expect(await ours.getJobState('b/t2')).toBe('waiting');
        const job = (await ours.getJob('b/t2')) as Job;
        expect([job.name, job.data, job.opts.attempts, job.opts.backoff]).toEqual([
          'BASE→ARB 2.00 USDC',
          { batchId: 'b', transferId: 'b/t2' },
          TRANSFER_JOB_OPTIONS.attempts,
          TRANSFER_JOB_OPTIONS.backoff,
        ]);

        // A duplicate id is ignored while its job exists (BullMQ's rule); the new ones are added.
        const again = jobs(['b/t1', 'b/t4']).map((j) => ({ ...j, name: 'renamed' }));
        expect(await addWaitingJobs(client, ours, again)).toBe(1);
        expect((await ours.getJob('b/t1'))?.name).toBe('BASE→ARB 1.00 USDC');
        expect(await ours.getJobCounts('waiting')).toEqual({ waiting: 4 });
        await expect(
          addWaitingJobs(client, ours, [{ ...jobs(['b/x'])[0]!, opts: { delay: 5 } }]),
        ).rejects.toThrow(/option delay/);
      } finally {
        await bull.close();
        await ours.close();
      }
    });

    it('a paused queue keeps them, with no marker, as it keeps jobs BullMQ adds', async () => {
      const q = open('add-paused');
      try {
        await q.pause();
        await addWaitingJobs(client, q, jobs(['p/ours']));
        await addBulk(q, jobs(['p/bull']));
        expect(await client.exists(q.toKey('marker'))).toBe(0);
        expect(await q.getJobState('p/ours')).toBe(await q.getJobState('p/bull'));
      } finally {
        await q.close();
      }
    });

    it('a worker runs them in the order added', async () => {
      const q = open('add-run');
      const ran: string[] = [];
      const worker = new Worker(
        'add-run',
        async (job) => {
          ran.push(`${job.id} ${job.attemptsMade} ${job.opts.attempts}`);
          return 'ok';
        },
        { connection: { url: redis.url, maxRetriesPerRequest: null }, prefix },
      );
      try {
        await addWaitingJobs(client, q, jobs(['r/1', 'r/2', 'r/3']));
        await waitFor(
          'the jobs to complete',
          async () => (await q.getJobCounts('completed')).completed === 3,
        );
        expect(ran).toEqual(['r/1 0 1000', 'r/2 0 1000', 'r/3 0 1000']);
      } finally {
        await worker.close();
        await q.close();
      }
    });
  });
});
