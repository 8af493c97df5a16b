import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/e2e.ts';
import { mixedRows } from '../helpers/fixtures.ts';

describe('API_RATE_LIMIT', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: { API_RATE_LIMIT: '8' } });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('keeps calls to the service under the limit across two worker processes', async () => {
    const rows = mixedRows(24, 'rl');
    const { batchId } = await stack.enqueue(rows);
    const started = Date.now();
    stack.startWorker();
    stack.startWorker();
    const doc = await stack.waitComplete(batchId, 60_000);
    const elapsed = Date.now() - started;
    expect(doc.counts.submitted).toBe(24);
    // Every row needs at least two calls (estimate, then transfer or build-tx + submit): 48+ calls
    // at 8 per second cannot take less than 5 s, whatever two processes do at once.
    expect(elapsed).toBeGreaterThanOrEqual(5_000);
    // And no second saw more than 8 payments (a payment is one of the calls counted).
    const perSecond = new Map<number, number>();
    for (const e of await stack.ledger()) {
      const s = Math.floor(e.at / 1000);
      perSecond.set(s, (perSecond.get(s) ?? 0) + 1);
    }
    expect(Math.max(...perSecond.values())).toBeLessThanOrEqual(8);
  });
});
