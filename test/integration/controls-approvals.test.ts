import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';
import { approveCli } from '../helpers/approve.ts';
import { checkLedger, jobsOfBatch, startStack, type Stack } from '../helpers/e2e.ts';
import { csvOf, randomEvmAddress, type Row } from '../helpers/fixtures.ts';

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

type EnqueueDoc = { batch_id: string; held: boolean; accepted: number };

/**
 * docs/promises.md, promise 5, through the real CLI against the sandbox with a worker running: only
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

  it('keeps a held batch held through cancel and retry, and a cancelled row cancelled: nothing is paid until approve, then each other row once', async () => {
    const held = rows(3, 'hole', '50');
    const enq = await stack.enqueue(held, ['--batch-id', 'hole-1']);
    expect(enq.code).toBe(0);
    expect((JSON.parse(enq.stdout) as EnqueueDoc).held).toBe(true);

    const cancel = await cli(['cancel', 'hole-1', '--transfer', 'hole-1']);
    expect(cancel.code).toBe(0);
    expect(cancel.stdout).toMatch(/cancelled 1 unsent/);
    expect(await stack.status('hole-1')).toMatchObject({ held: true, counts: { queued: 2, cancelled: 1 } });

    // A cancelled row is final: retry re-queues nothing (it once re-queued the row, which the
    // approval of the others then paid).
    const retry = await cli(['retry', 'hole-1']);
    expect(retry.code).toBe(0);
    expect(retry.stdout).toMatch(/re-queued 0 failed/);
    const waiting = await stack.status('hole-1');
    expect(waiting).toMatchObject({ held: true, complete: false, counts: { queued: 2, cancelled: 1 } });
    // The hole was jobs: a held batch's rows must have none, so no worker can take them.
    expect(await jobsOfBatch(stack.client, prefix(), 'hole-1')).toEqual([]);

    // A small batch on the same queue goes through the running worker meanwhile: by the time it is
    // paid, a job of the held batch added before it would have been taken too.
    const canary = await stack.enqueue(rows(1, 'canary', '5'), ['--batch-id', 'canary-1']);
    expect((JSON.parse(canary.stdout) as EnqueueDoc).held).toBe(false);
    expect((await stack.waitComplete('canary-1', 60_000)).counts.submitted).toBe(1);
    expect(await paidTo(held.map((r) => r.recipient))).toEqual([]);
    expect((await stack.status('hole-1')).counts.queued).toBe(2);

    const approve = await approveCli('hole-1', stack.env);
    expect(approve.code).toBe(0);
    expect(approve.stdout).toMatch(/released 2/);
    const doc = await stack.waitComplete('hole-1', 60_000);
    expect(doc).toMatchObject({ held: false, counts: { submitted: 2, cancelled: 1 } });
    const paid = await paidTo(held.map((r) => r.recipient));
    expect(paid.map((e) => e.recipient.toLowerCase()).sort()).toEqual(
      [held[0]!.recipient, held[2]!.recipient].map((r) => r.toLowerCase()).sort(),
    );
    expect(checkLedger(doc, paid)).toEqual({ paidTwice: [], problems: [] });
  });

  it('counts what was enqueued without approval over 24 hours: the batch that takes the sum to the threshold is held', async () => {
    // A prefix of its own, so that the other tests' batches are not in its window.
    const env = { ...stack.env, QUEUE_PREFIX: `${prefix()}w` };
    const enqueue = async (amount: string, batchId: string) => {
      const file = join(stack.dir, `${batchId}.csv`);
      writeFileSync(file, csvOf(rows(1, batchId, amount)));
      const res = await runCli(['enqueue', file, '--json', '--batch-id', batchId], env);
      expect(res.code, res.stderr).toBe(0);
      return JSON.parse(res.stdout) as EnqueueDoc & { held_reason?: string };
    };
    expect((await enqueue('60', 'w-1')).held).toBe(false);
    expect((await enqueue('39.99', 'w-2')).held).toBe(false);
    // 60 + 39.99 + 0.01 = 100: this one reaches the threshold.
    const third = await enqueue('0.01', 'w-3');
    expect(third.held).toBe(true);
    expect(third.held_reason).toMatch(
      /APPROVAL_THRESHOLD_USDC: 100(\.0+)? USDC .* reaches the threshold of 100/,
    );
    // A held batch is not "enqueued without approval": the window still holds 99.99, and so the
    // next cent is held too, while nothing under the threshold would have been.
    expect((await enqueue('0.01', 'w-4')).held).toBe(true);
    const doc = JSON.parse((await runCli(['status', 'w-3', '--json'], env)).stdout) as {
      held: boolean;
      held_reason: string | null;
    };
    expect(doc.held).toBe(true);
    expect(doc.held_reason).toMatch(/APPROVAL_THRESHOLD_USDC/);
    const unheld = JSON.parse((await runCli(['status', 'w-1', '--json'], env)).stdout) as {
      held_reason: unknown;
    };
    expect(unheld.held_reason).toBeNull();
  });

  it('holds the rows retry re-queues when they take the unapproved sum to the threshold; approve then pays them once', async () => {
    // Both estimates are refused (HTTP 400): the two rows end `failed`, having paid nothing. (The
    // worker's own estimate at start, its key check, is behind it by then.)
    await stack.workersReady();
    await stack.sandbox.admin.configure({
      failBeforeStatus: 400,
      faultScript: [
        { op: 'estimate', fault: 'fail_before' },
        { op: 'estimate', fault: 'fail_before' },
      ],
    });
    const batch = rows(2, 'rth', '40');
    const enq = await stack.enqueue(batch, ['--batch-id', 'retry-held']);
    expect((JSON.parse(enq.stdout) as EnqueueDoc).held).toBe(false);
    const first = await stack.waitComplete('retry-held', 60_000);
    expect(first.counts.failed).toBe(2);
    await stack.sandbox.admin.configure({ failBeforeStatus: 503, faultScript: [] });

    // 80 enqueued unapproved, and 80 more re-queued: the retry reaches the threshold of 100.
    const retry = await cli(['retry', 'retry-held']);
    expect(retry.code).toBe(0);
    expect(retry.stdout).toMatch(/re-queued 2 failed/);
    expect(retry.stdout).toMatch(/held for approval/);
    const waiting = await stack.status('retry-held');
    expect(waiting).toMatchObject({ held: true, complete: false, counts: { queued: 2 } });
    expect(waiting.held_reason).toMatch(/^retry: .*APPROVAL_THRESHOLD_USDC/);
    expect(
      await jobsOfBatch(stack.client, prefix(), 'retry-held').then((j) => j.filter((x) => x.includes('/r1'))),
    ).toEqual([]);

    // A held retry is not counted (it runs only with an approval): a small batch still goes through,
    // and by the time it is paid a job of the held rows would have been taken too.
    const canary = await stack.enqueue(rows(1, 'canary2', '5'), ['--batch-id', 'canary-2']);
    expect((JSON.parse(canary.stdout) as EnqueueDoc).held).toBe(false);
    expect((await stack.waitComplete('canary-2', 60_000)).counts.submitted).toBe(1);
    expect(await paidTo(batch.map((r) => r.recipient))).toEqual([]);

    expect((await approveCli('retry-held', stack.env)).code).toBe(0);
    const doc = await stack.waitComplete('retry-held', 60_000);
    expect(doc).toMatchObject({ held: false, held_reason: null, counts: { submitted: 2 } });
    const paid = await paidTo(batch.map((r) => r.recipient));
    expect(checkLedger(doc, paid)).toEqual({ paidTwice: [], problems: [] });
    expect(paid).toHaveLength(2);
    const audit = JSON.parse((await cli(['audit', '--batch', 'retry-held', '--json'])).stdout) as {
      entries: { action: string; detail: unknown }[];
    };
    expect(audit.entries.map((e) => e.action)).toEqual(['approve', 'retry', 'enqueue']);
    // (a sentence, or an object whose text names the reason)
    expect(JSON.stringify(audit.entries[1]?.detail)).toMatch(/retry: APPROVAL_THRESHOLD_USDC/);
  });
});
