import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Chain } from '../../src/domain/chains.ts';
import { queueNameFor, transferJobId } from '../../src/queue/jobs.ts';
import type { BatchStatus } from '../../src/present/batch-status.ts';
import { runCli, waitFor } from '../helpers/cli.ts';
import { startStack, transferJobStates, waitsCounted, type Stack } from '../helpers/e2e.ts';
import { randomEvmAddress, type Row } from '../helpers/fixtures.ts';

const CAP = 55n * 1_000_000n;
const toMicro = (amount: string): bigint => {
  const [w, f = ''] = amount.split('.');
  return BigInt(w ?? '0') * 1_000_000n + BigInt(f.padEnd(6, '0'));
};

/**
 * MAX_DAILY_USDC across worker processes (docs/configuration.md, "States and promises", promise 5): two batches enqueued at
 * once through the real CLI, two worker processes taking jobs from four source-chain queues, one
 * cap of 55 USDC for 80 USDC of 10-USDC rows — exactly five rows fit.
 */
describe('treasury controls: the daily cap with two batches and two workers', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await startStack({ env: { MAX_DAILY_USDC: '55', WORKER_CONCURRENCY: '8' } });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('never sends more than the cap in total; the rest wait queued with the reason in status --json', async () => {
    const chains = ['ETH', 'BASE', 'ARB', 'POLYGON'] as const;
    const batch = (tag: string): Row[] =>
      Array.from({ length: 4 }, (_, i) => ({
        id: `${tag}-${i}`,
        from: chains[i % 4] as string,
        to: chains[(i + 1) % 4] as string,
        amount: '10',
        recipient: randomEvmAddress(),
      }));
    stack.startWorker();
    stack.startWorker();
    const [a, b] = await Promise.all([
      stack.enqueue(batch('cap-a'), ['--batch-id', 'cap-a']),
      stack.enqueue(batch('cap-b'), ['--batch-id', 'cap-b']),
    ]);
    expect([a.code, b.code]).toEqual([0, 0]);

    const statusJson = async (batchId: string): Promise<BatchStatus> => {
      const res = await runCli(['status', batchId, '--json'], stack.env, { timeoutMs: 30_000 });
      expect(res.code, res.stderr).toBe(0);
      return JSON.parse(res.stdout) as BatchStatus;
    };
    // Settled: five sent, three waiting on the cap, nothing in flight.
    const [docA, docB] = await waitFor(
      'five transfers sent and three waiting on the cap',
      async () => {
        const docs = await Promise.all([stack.status('cap-a'), stack.status('cap-b')]);
        const submitted = docs.reduce((s, d) => s + d.counts.submitted, 0);
        const waiting = docs.flatMap((d) => d.transfers).filter((t) => t.state === 'queued' && t.wait_reason);
        return submitted === 5 && waiting.length === 3 ? docs : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    expect(docA.counts.submitted + docB.counts.submitted).toBe(5);

    // The workers keep running and look at the held rows again: each capped job, run again now (as
    // when its delay ends), is held again. Observed, not slept on: every worker's count of daily-cap
    // waits grows by the three second looks, and the three jobs are back in the delayed set.
    const prefix = stack.env['QUEUE_PREFIX'] as string;
    const held = [docA, docB].flatMap((d) =>
      d.transfers.filter((t) => t.state === 'queued').map((t) => ({ ...t, batchId: d.batch_id })),
    );
    expect(held).toHaveLength(3);
    const queues = new Map<string, Queue>();
    const allDelayed = async (): Promise<boolean> =>
      (await transferJobStates(stack, held)).every((s) => s === 'delayed');
    const capWaits = () => waitsCounted(stack.client, prefix, 'daily_cap');
    const firstLooks = await waitFor(
      'the three capped jobs delayed and their waits counted',
      async () => {
        const n = await capWaits();
        return n >= 3 && (await allDelayed()) ? n : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    try {
      for (const t of held) {
        const name = queueNameFor(t.from as Chain);
        const q = queues.get(name) ?? new Queue(name, { connection: { url: stack.redis.url }, prefix });
        queues.set(name, q);
        await (await q.getJob(transferJobId(t.batchId, t.id)))?.promote();
      }
    } finally {
      await Promise.all([...queues.values()].map((q) => q.close()));
    }
    await waitFor(
      'each capped job looked at again and held again',
      async () => (await capWaits()) >= firstLooks + 3 && (await allDelayed()),
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    const ledger = await stack.ledger();
    const sum = ledger.reduce((s, e) => s + BigInt(e.amount), 0n);
    expect(ledger).toHaveLength(5);
    expect(sum).toBe(50n * 1_000_000n);
    expect(sum).toBeLessThanOrEqual(CAP);
    expect(new Set(ledger.map((e) => e.recipient)).size).toBe(5);

    const docs = await Promise.all([statusJson('cap-a'), statusJson('cap-b')]);
    const all = docs.flatMap((d) => d.transfers);
    const sent = all.filter((t) => t.state === 'submitted');
    expect(sent).toHaveLength(5);
    expect(sent.reduce((s, t) => s + toMicro(t.amount), 0n)).toBeLessThanOrEqual(CAP);
    const waiting = all.filter((t) => t.state !== 'submitted');
    expect(waiting).toHaveLength(3);
    for (const t of waiting) {
      expect(t.state).toBe('queued');
      expect(t.intent_id).toBeNull();
      expect(t.wait_reason).toMatch(
        /^MAX_DAILY_USDC: 50(\.0+)? of 55(\.0+)? USDC sent in the last 24 h; waiting/,
      );
    }
    // A batch with a transfer waiting on the cap is not complete (one batch may have been paid whole).
    for (const d of docs) expect(d.complete).toBe(d.counts.queued === 0);
    expect(docs.some((d) => !d.complete)).toBe(true);
    // Every paid row is one of ours, once: the two workers never both paid a row.
    const paidRecipients = new Set(ledger.map((e) => e.recipient.toLowerCase()));
    expect(sent.every((t) => paidRecipients.has(t.recipient.toLowerCase()))).toBe(true);
  });
});
