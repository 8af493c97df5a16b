import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';
import { checkLedger, startStack, type Stack } from '../helpers/e2e.ts';
import { randomEvmAddress, type Row } from '../helpers/fixtures.ts';

/** `n` BASE→ARB rows of `amount`, each to its own recipient (the ledger tells them apart). */
function rows(n: number, tag: string, amount: string): Row[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `${tag}-${i}`,
    from: 'BASE',
    to: 'ARB',
    amount,
    recipient: randomEvmAddress(),
  }));
}

/** Every BullMQ job hash of the batch, in any state (a job that ran and finished is still kept). */
async function jobsOf(redis: Redis, prefix: string, batchId: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(
      cursor,
      'MATCH',
      `${prefix}:transfers-*:${batchId}/*`,
      'COUNT',
      1000,
    );
    cursor = next;
    out.push(...found.filter((k) => !k.endsWith(':lock') && !k.endsWith(':logs')));
  } while (cursor !== '0');
  return out;
}

type EnqueueDoc = { batch_id: string; held: boolean; accepted: number };

/**
 * PRODUCT.md §5 promise 5, through the real CLI against the sandbox with a worker running: only
 * `approve` releases a held batch — not `cancel`, not `retry` — and the approval threshold counts
 * everything enqueued without approval over the rolling 24 hours, not one batch at a time.
 */
describe('approvals hold through cancel, retry and many small batches', () => {
  let stack: Stack;
  const cli = (args: string[]) => runCli(args, stack.env);
  const prefix = () => stack.env['QUEUE_PREFIX'] as string;
  const paidTo = async (recipients: readonly string[]) => {
    const set = new Set(recipients.map((r) => r.toLowerCase()));
    return (await stack.ledger()).filter((e) => set.has(e.recipient.toLowerCase()));
  };

  beforeAll(async () => {
    stack = await startStack({ env: { APPROVAL_THRESHOLD_USDC: '100' } });
    stack.startWorker();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('keeps a held batch held through cancel and retry: nothing is paid until approve, then each row once', async () => {
    const held = rows(3, 'hole', '50');
    const enq = await stack.enqueue(held, ['--batch-id', 'hole-1']);
    expect(enq.code).toBe(0);
    expect((JSON.parse(enq.stdout) as EnqueueDoc).held).toBe(true);

    const cancel = await cli(['cancel', 'hole-1']);
    expect(cancel.code).toBe(0);
    expect(cancel.stdout).toMatch(/cancelled 3 unsent/);
    expect(await stack.status('hole-1')).toMatchObject({ held: true, counts: { failed: 3 } });

    const retry = await cli(['retry', 'hole-1']);
    expect(retry.code).toBe(0);
    expect(retry.stdout).toMatch(/re-queued 3 failed/);
    const waiting = await stack.status('hole-1');
    expect(waiting).toMatchObject({ held: true, complete: false, counts: { queued: 3 } });
    // The hole was jobs: a held batch's rows must have none, so no worker can take them.
    expect(await jobsOf(stack.client, prefix(), 'hole-1')).toEqual([]);

    // A small batch on the same queue goes through the running worker meanwhile: by the time it is
    // paid, a job of the held batch added before it would have been taken too.
    const canary = await stack.enqueue(rows(1, 'canary', '5'), ['--batch-id', 'canary-1']);
    expect((JSON.parse(canary.stdout) as EnqueueDoc).held).toBe(false);
    expect((await stack.waitComplete('canary-1', 60_000)).counts.submitted).toBe(1);
    expect(await paidTo(held.map((r) => r.recipient))).toEqual([]);
    expect((await stack.status('hole-1')).counts.queued).toBe(3);

    const approve = await cli(['approve', 'hole-1']);
    expect(approve.code).toBe(0);
    expect(approve.stdout).toMatch(/released 3/);
    const doc = await stack.waitComplete('hole-1', 60_000);
    expect(doc).toMatchObject({ held: false, counts: { submitted: 3 } });
    const paid = await paidTo(held.map((r) => r.recipient));
    expect(paid).toHaveLength(3);
    expect(checkLedger(doc, paid)).toEqual({ paidTwice: [], problems: [] });
  });
});
