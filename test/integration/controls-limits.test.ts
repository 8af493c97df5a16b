import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';
import { csvOf, randomEvmAddress, type Row } from '../helpers/fixtures.ts';
import { startPrivateRedis, type TestRedis } from '../helpers/redis.ts';

type EnqueueDoc = {
  batch_id: string | null;
  accepted: number;
  rejected: number;
  errors: { line: number | null; column: string | null; message: string }[];
};

/** Spend limits at ingest (docs/configuration.md), through the real `usdc-batch enqueue` process. */
describe('treasury controls: per-transfer and per-batch limits', () => {
  let redis: TestRedis;
  let dir: string;
  let n = 0;
  const enqueue = async (rows: Row[], extra: Record<string, string>, args: string[] = []) => {
    const prefix = `lim${n++}`;
    const file = join(dir, `${prefix}.csv`);
    writeFileSync(file, csvOf(rows));
    const res = await runCli(
      ['enqueue', file, '--json', ...args],
      { REDIS_URL: redis.url, QUEUE_PREFIX: prefix, ...extra },
      { timeoutMs: 30_000 },
    );
    return { ...res, doc: JSON.parse(res.stdout) as EnqueueDoc, prefix };
  };
  const status = async (batchId: string, prefix: string) =>
    await runCli(
      ['status', batchId, '--json'],
      { REDIS_URL: redis.url, QUEUE_PREFIX: prefix },
      { timeoutMs: 30_000 },
    );
  const row = (id: string, amount: string): Row => ({
    id,
    from: 'BASE',
    to: 'ARB',
    amount,
    recipient: randomEvmAddress(),
  });

  beforeAll(async () => {
    redis = await startPrivateRedis();
    dir = mkdtempSync(join(tmpdir(), 'usdc-limits-'));
  });
  afterAll(async () => {
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reports a row over MAX_TRANSFER_USDC at its line and column, and enqueues nothing', async () => {
    const rows = [row('a', '100'), row('b', '100.000001'), row('c', '5'), row('d', '250')];
    const { code, doc, prefix } = await enqueue(rows, { MAX_TRANSFER_USDC: '100' });
    expect(code).toBe(1);
    expect(doc.batch_id).toBeNull();
    const over = doc.errors.filter((e) => /MAX_TRANSFER_USDC/.test(e.message));
    // Line 1 is the header: rows b and d are lines 3 and 5.
    expect(over.map((e) => [e.line, e.column])).toEqual([
      [3, 'amount'],
      [5, 'amount'],
    ]);
    // Exactly 100 is within the limit.
    expect(doc.errors.some((e) => e.line === 2)).toBe(false);
    const batches = await runCli(['batches', '--json'], { REDIS_URL: redis.url, QUEUE_PREFIX: prefix });
    expect(JSON.parse(batches.stdout)).toEqual({ batches: [], paused: null });
  });

  it('with --skip-invalid enqueues the rows within MAX_TRANSFER_USDC and still reports the others', async () => {
    const rows = [row('e', '10'), row('f', '100.5'), row('g', '20')];
    const { code, doc, prefix } = await enqueue(rows, { MAX_TRANSFER_USDC: '100' }, ['--skip-invalid']);
    expect(code).toBe(0);
    expect(doc).toMatchObject({ accepted: 2, rejected: 1 });
    expect(doc.errors.map((e) => [e.line, e.column])).toEqual([[3, 'amount']]);
    const st = JSON.parse((await status(doc.batch_id as string, prefix)).stdout) as {
      transfers: { id: string }[];
      totals: { amount: string };
    };
    expect(st.transfers.map((t) => t.id)).toEqual(['e', 'g']);
    expect(st.totals.amount).toBe('30.00');
  });

  it('refuses a batch whose total is over MAX_BATCH_USDC, whole, and accepts one at the limit', async () => {
    const over = await enqueue([row('h', '30'), row('i', '20.000001')], { MAX_BATCH_USDC: '50' }, [
      '--batch-id',
      'too-big',
    ]);
    expect(over.code).toBe(1);
    expect(over.doc.batch_id).toBeNull();
    expect(over.doc.errors).toEqual([
      expect.objectContaining({ message: expect.stringMatching(/above MAX_BATCH_USDC \(50(\.0+)?\)/) }),
    ]);
    const missing = await status('too-big', over.prefix);
    expect(missing.code).not.toBe(0);

    const atLimit = await enqueue([row('j', '30'), row('k', '20')], { MAX_BATCH_USDC: '50' });
    expect(atLimit.code).toBe(0);
    expect(atLimit.doc).toMatchObject({ accepted: 2, rejected: 0 });
  });
});
