import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/cli.ts';
import { checkLedger, startStack, type Stack } from '../helpers/e2e.ts';
import { mixedRows } from '../helpers/fixtures.ts';

describe('worker: crashes and restarts', () => {
  let stack: Stack;
  beforeAll(async () => {
    // 40 ms per call keeps the batch in flight long enough to crash in the middle of it.
    stack = await startStack({ latencyMs: 40 });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('completes a batch after kill -9 of its workers mid-batch (twice), paying no row twice and losing none', async () => {
    const rows = mixedRows(150, 'kill');
    const { batchId } = await stack.enqueue(rows);
    // Two kills at different points of the batch: each cuts off sends in flight at random places.
    for (const atLeast of [20, 70]) {
      const doomed = stack.startWorker();
      await waitFor(`${atLeast} submitted`, async () => (await stack.counts(batchId)).submitted >= atLeast, {
        timeoutMs: 90_000,
      });
      await doomed.kill9();
    }
    expect((await stack.status(batchId)).counts.submitted).toBeLessThan(150);
    stack.startWorker();
    const doc = await stack.waitComplete(batchId, 150_000);
    expect(doc.counts.queued + doc.counts.in_progress).toBe(0);
    const { paidTwice, problems } = checkLedger(doc, await stack.ledger());
    expect(problems).toEqual([]);
    expect(paidTwice).toEqual([]);
    // A send cut off by a kill is either re-sent identically (submitted) or left for review.
    expect(doc.counts.submitted + doc.counts.needs_review).toBe(150);
  });

  it('rides through a Redis restart (AOF on) mid-batch without help', async () => {
    const rows = mixedRows(90, 'redis');
    const { batchId } = await stack.enqueue(rows);
    const worker = stack.startWorker();
    await waitFor('some progress', async () => (await stack.counts(batchId)).submitted >= 10, {
      timeoutMs: 60_000,
    });
    await stack.redis.restart({ downMs: 1_500 });
    const doc = await stack.waitComplete(batchId, 100_000);
    expect(worker.child.exitCode).toBeNull();
    expect(doc.counts.queued + doc.counts.in_progress).toBe(0);
    const { paidTwice, problems } = checkLedger(doc, await stack.ledger());
    expect(paidTwice).toEqual([]);
    expect(problems).toEqual([]);
    expect(doc.counts.submitted + doc.counts.needs_review).toBe(90);
  });
});
