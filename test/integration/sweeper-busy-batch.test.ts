import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Chain } from '../../src/domain/chains.ts';
import { createLogger } from '../../src/log/logger.ts';
import type { PipelineDeps } from '../../src/pipeline/run-transfer.ts';
import { queueNameFor } from '../../src/queue/jobs.ts';
import { DEFAULT_HOLD_TIMES } from '../../src/domain/hold-times.ts';
import { BUSY_BATCH_SWEEP_MS, sweepUnfinished } from '../../src/queue/sweeper.ts';
import { keys } from '../../src/store/keys.ts';
import { createTransferStore } from '../../src/store/transfer-store.ts';
import { startPrivateRedis, type TestRedis } from '../helpers/redis.ts';

/*
 * When the sweeper reads a batch (sweeper.ts readNow): a quiet batch at every sweep; a busy one —
 * its record changed within the quiet time (WORKER_LOCK_MS's sweepQuietMs; no policy here: the
 * default) — not at a process's first sight of it, then at most
 * every BUSY_BATCH_SWEEP_MS, and at the first sweep once it is quiet. Each case is a transfer whose
 * job was lost (never added): the sweep that reads its batch adds it again (promise 2), so whether
 * a sweep read the batch shows as the job.
 */
describe('sweeper: a busy batch is read later, never not', () => {
  let redis: TestRedis;
  let client: Redis;
  const logger = createLogger('silent');
  const t0 = Date.now();
  const minutes = (n: number) => n * 60_000;
  let n = 0;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    client = new Redis(redis.url);
  });
  afterAll(async () => {
    client?.disconnect();
    await redis?.stop();
  });

  /** A prefix of its own with an open batch, changed at `batchAt`, whose one queued transfer has no job. */
  async function lostJob(batchAt: number) {
    const prefix = `sweep${n++}`;
    const k = keys(prefix);
    await client.zadd(k.batches, 1, 'b');
    await client.hset(k.batch('b'), { enqueued: '1', updated_at: String(batchAt) });
    await client.hset(k.transfer('b', 't1'), {
      id: 't1',
      from: 'BASE',
      to: 'ARB',
      amount: '1000000',
      state: 'queued',
      updated_at: String(t0 - minutes(5)),
    });
    await client.zadd(k.batchState('b', 'queued'), 1, 't1');
    const queue = new Queue(queueNameFor('BASE'), { connection: { url: redis.url }, prefix });
    const busyReadAt = new Map<string, number>();
    const pipeline = { store: createTransferStore({ redis: client, prefix }) } as unknown as PipelineDeps;
    const sweepAt = async (now: number) =>
      await sweepUnfinished({
        redis: client,
        prefix,
        pipeline,
        queues: new Map<Chain, Queue>([['BASE', queue]]),
        logger,
        now: () => now,
        busyReadAt,
      });
    const touched = async (at: number) => await client.hset(k.batch('b'), 'updated_at', String(at));
    const readded = async () => (await queue.getJob('b/t1')) !== undefined;
    return { k, queue, busyReadAt, sweepAt, touched, readded };
  }

  it('reads a quiet batch at its first sight', async () => {
    const s = await lostJob(t0 - minutes(5));
    try {
      expect(await s.sweepAt(t0)).toBe(1);
      expect(await s.readded()).toBe(true);
    } finally {
      await s.queue.close();
    }
  });

  it('a busy batch: its first sight starts its clock; read once the clock has run, though still busy', async () => {
    const s = await lostJob(t0);
    try {
      expect(await s.sweepAt(t0)).toBe(0);
      await s.touched(t0 + BUSY_BATCH_SWEEP_MS - 2_000);
      expect(await s.sweepAt(t0 + BUSY_BATCH_SWEEP_MS - 1_000)).toBe(0);
      expect(await s.readded()).toBe(false);
      await s.touched(t0 + BUSY_BATCH_SWEEP_MS - 1_000);
      expect(await s.sweepAt(t0 + BUSY_BATCH_SWEEP_MS)).toBe(1);
      expect(await s.readded()).toBe(true);
    } finally {
      await s.queue.close();
    }
  });

  it('a busy batch is read at the first sweep once it is quiet, and its clock is forgotten', async () => {
    const s = await lostJob(t0);
    try {
      expect(await s.sweepAt(t0 + 1_000)).toBe(0);
      expect(s.busyReadAt.has('b')).toBe(true);
      expect(await s.sweepAt(t0 + DEFAULT_HOLD_TIMES.sweepQuietMs)).toBe(1);
      expect(await s.readded()).toBe(true);
      expect(s.busyReadAt.has('b')).toBe(false);
    } finally {
      await s.queue.close();
    }
  });

  it("forgets a busy batch's clock once the batch is no longer open", async () => {
    const s = await lostJob(t0);
    try {
      expect(await s.sweepAt(t0 + 1_000)).toBe(0);
      expect(s.busyReadAt.has('b')).toBe(true);
      await client.hset(s.k.batch('b'), 'held', '1');
      expect(await s.sweepAt(t0 + 2_000)).toBe(0);
      expect(s.busyReadAt.has('b')).toBe(false);
    } finally {
      await s.queue.close();
    }
  });
});
