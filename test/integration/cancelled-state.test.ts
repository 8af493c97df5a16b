import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cancelBatch, cancelTransfers } from '../../src/ops/cancel.ts';
import { retryBatch } from '../../src/ops/retry-batch.ts';
import { createBatchReader } from '../../src/present/batch-status.ts';
import type { TransferJobSpec } from '../../src/domain/transfer-jobs.ts';
import { createTransferStore } from '../../src/store/transfer-store.ts';
import { Readable } from 'node:stream';
import { enqueueValidated } from '../../src/ingest/enqueue-batch.ts';
import { validateCsv } from '../../src/ingest/validate-input.ts';
import { EVM, newPrefix, testConfig } from './ingest-fixtures.ts';
import { redisForSuite } from '../helpers/redis.ts';

/** Enqueues `n` BASE→ARB rows `<batchId>-<i>` of 5 USDC as batch `batchId`; their jobs go nowhere. */
async function enqueueRows(redis: Redis, prefix: string, batchId: string, n: number): Promise<void> {
  const lines = Array.from({ length: n }, (_, i) => `${batchId}-${i},BASE,ARB,5,${EVM[i % EVM.length]}`);
  const input = await validateCsv(Readable.from([`id,from,to,amount,recipient\n${lines.join('\n')}\n`]), {
    maxTransferUsdc: undefined,
    allowDuplicates: true,
  });
  const nowhere = { addTransfers: async () => {} };
  const config = testConfig({ QUEUE_PREFIX: prefix });
  const out = await enqueueValidated({ redis, prefix, jobs: nowhere, config }, input, {
    source: 'csv',
    actor: 'cli:test',
    batchId,
    allowDuplicates: true,
  });
  expect(out.status).toBe('enqueued');
}

/**
 * docs/promises.md: `cancelled` is a final state of its own — counted as such, never
 * re-queued by `retry` — and a row an older version cancelled (stored `failed` with error code
 * `cancelled`) is left alone by `retry` too.
 */
describe('cancelled is final', () => {
  let suite: Awaited<ReturnType<typeof redisForSuite>>;
  let redis: Redis;
  const jobs: { batchId: string; transfers: readonly TransferJobSpec[] }[] = [];
  const sink = {
    async addTransfers(batchId: string, transfers: readonly TransferJobSpec[]) {
      jobs.push({ batchId, transfers });
    },
  };

  beforeAll(async () => {
    suite = await redisForSuite();
    redis = new Redis(suite.url);
  });
  afterAll(async () => {
    redis?.disconnect();
    await suite?.close();
  });

  it('counts cancelled rows as cancelled, completes the batch, and retry re-queues none of them', async () => {
    const prefix = newPrefix();
    await enqueueRows(redis, prefix, 'cf-1', 3);
    const ops = { redis, prefix, jobs: sink, actor: 'cli:test' };
    expect(await cancelTransfers(ops, 'cf-1', ['cf-1-0'])).toEqual({ cancelled: ['cf-1-0'], skipped: [] });
    const store = createTransferStore({ redis, prefix });
    await store.transition('cf-1', 'cf-1-1', {
      expected: ['queued'],
      to: 'failed',
      fields: { error: { code: 'refused', message: 'no' } },
    });
    expect(await cancelBatch(ops, 'cf-1')).toEqual({ cancelled: 1 });
    const reader = createBatchReader({ redis, prefix });
    const doc = await reader.status('cf-1');
    expect(doc?.counts).toMatchObject({ queued: 0, failed: 1, cancelled: 2 });
    expect(doc?.complete).toBe(true);
    expect(doc?.transfers.map((t) => [t.id, t.state, t.error?.code])).toEqual([
      ['cf-1-0', 'cancelled', 'cancelled'],
      ['cf-1-1', 'failed', 'refused'],
      ['cf-1-2', 'cancelled', 'cancelled'],
    ]);

    jobs.length = 0;
    const retried = await retryBatch({ ...ops, config: testConfig({ QUEUE_PREFIX: prefix }) }, 'cf-1');
    expect(retried.requeued).toBe(1);
    expect(jobs.flatMap((j) => j.transfers.map((t) => t.transferId))).toEqual(['cf-1-1']);
    expect((await reader.summary('cf-1'))?.counts).toMatchObject({ queued: 1, cancelled: 2 });
  });

  it('leaves a row an older version cancelled (failed, error code cancelled) to retry', async () => {
    const prefix = newPrefix();
    await enqueueRows(redis, prefix, 'cf-old', 2);
    const store = createTransferStore({ redis, prefix });
    for (const [id, code] of [
      ['cf-old-0', 'cancelled'],
      ['cf-old-1', 'refused'],
    ] as const) {
      await store.transition('cf-old', id, {
        expected: ['queued'],
        to: 'failed',
        fields: { error: { code: code, message: code === 'cancelled' ? 'cancelled by cli:root' : 'no' } },
      });
    }
    jobs.length = 0;
    const ops = {
      redis,
      prefix,
      jobs: sink,
      actor: 'cli:test',
      config: testConfig({ QUEUE_PREFIX: prefix }),
    };
    expect((await retryBatch(ops, 'cf-old')).requeued).toBe(1);
    expect(jobs.flatMap((j) => j.transfers.map((t) => t.transferId))).toEqual(['cf-old-1']);
    const doc = await createBatchReader({ redis, prefix }).status('cf-old');
    expect(doc?.transfers.map((t) => [t.id, t.state])).toEqual([
      ['cf-old-0', 'failed'],
      ['cf-old-1', 'queued'],
    ]);
  });
});
