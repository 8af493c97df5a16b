import { afterEach, describe, expect, it } from 'vitest';
import type { LedgerEntry } from '../../src/sandbox/sandbox.ts';
import { metricKeys } from '../../src/metrics/worker-metrics.ts';
import { queueNameFor } from '../../src/queue/jobs.ts';
import { EVM_JOBS_PER_OWNER } from '../../src/queue/transfer-workers.ts';
import { keys } from '../../src/store/keys.ts';
import { waitFor } from '../helpers/cli.ts';
import { checkLedger, startStack, type Stack } from '../helpers/e2e.ts';
import { randomEvmAddress, TEST_EVM_ADDRESS, type Row } from '../helpers/fixtures.ts';

/**
 * Issue 17 as a user meets it: worker processes paying many rows of one (chain, owner), where each
 * transfer prepares its permit while the one before it is in flight and sends it the moment that
 * one is accepted. Every row is paid once, the owner's nonces reach the chain in order without a
 * gap, and a worker killed with a prepared permit saved loses nothing and pays nothing twice.
 */

function baseRows(n: number, tag: string): Row[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `${tag}-${i}`,
    from: 'BASE',
    to: 'ARB',
    amount: `${10 + (i % 9)}.${String(i % 100).padStart(2, '0')}`,
    recipient: randomEvmAddress(),
  }));
}

/** The owner's permits on BASE, in the order the service accepted them. */
const baseNonces = (ledger: LedgerEntry[]) =>
  ledger
    .filter((e) => e.kind === 'evm' && e.from === 'BASE' && e.owner === TEST_EVM_ADDRESS)
    .map((e) => BigInt(e.nonce as string));

/** Accepted in nonce order, and together 0, 1, 2, … with no nonce skipped. */
function expectInOrderWithoutGaps(nonces: bigint[], count: number) {
  expect(nonces).toEqual(Array.from({ length: count }, (_, i) => BigInt(i)));
}

async function records(stack: Stack, batchId: string, ids: string[]) {
  const k = keys(stack.env['QUEUE_PREFIX'] as string);
  return await Promise.all(
    ids.map(async (id) => ({ id, raw: await stack.client.hgetall(k.transfer(batchId, id)) })),
  );
}

/** The most jobs seen active at once on `queue`, sampled until `stop()`. */
function watchActiveJobs(stack: Stack, queue: string): { stop(): Promise<number> } {
  const key = `${stack.env['QUEUE_PREFIX']}:${queue}:active`;
  let most = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      most = Math.max(most, await stack.client.llen(key));
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return most;
    },
  };
}

describe('worker: the next permit prepared while one is in flight', () => {
  let stack: Stack | undefined;
  afterEach(async () => {
    await stack?.stop();
    stack = undefined;
  });

  it('two workers pay 60 rows of one (chain, owner) once each, nonces in order without gaps, through prepared permits', async () => {
    stack = await startStack({ latencyMs: 30 });
    const s = stack;
    const rows = baseRows(60, 'p');
    const { code, batchId } = await s.enqueue(rows);
    expect(code).toBe(0);
    const workers = [s.startWorker(), s.startWorker()];
    // Each process takes at most EVM_JOBS_PER_OWNER jobs of the one owner (WORKER_CONCURRENCY is
    // 16): the rest wait in BullMQ's wait list, never in a worker slot.
    const active = watchActiveJobs(s, queueNameFor('BASE'));
    const doc = await s.waitComplete(batchId, 110_000);
    expect(doc.counts).toMatchObject({ submitted: 60, failed: 0, needs_review: 0 });
    expect(await active.stop()).toBeLessThanOrEqual(2 * EVM_JOBS_PER_OWNER);
    // A job that waited for the lease waited in its slot, woken by name: none went back to the
    // queue for it (the workers' counters, flushed as they stop).
    await Promise.all(workers.map((w) => w.stop(10_000)));
    const counters = await s.client.hgetall(metricKeys(s.env['QUEUE_PREFIX'] as string).counters);
    expect(counters['waits|BASE|nonce_lease']).toBeUndefined();
    const ledger = await s.ledger();
    const { paidTwice, problems } = checkLedger(doc, ledger);
    expect(paidTwice).toEqual([]);
    expect(problems).toEqual([]);
    expectInOrderWithoutGaps(baseNonces(ledger), 60);
    // Each transfer request the service saw paid: no permit was refused, none sent twice.
    const sent = (await s.sandbox.admin.requests()).filter((r) => r.op === 'transfer').length;
    expect(sent).toBe(60);

    // Most went through the prepared path: signed while the one before was in flight, sent on the
    // hand-off, once (the record says so; the pool counts the hand-offs).
    const recs = await records(
      s,
      batchId,
      rows.map((r) => r.id as string),
    );
    const prepared = recs.filter((r) => r.raw['prepared_at']);
    expect(prepared.length).toBeGreaterThan(30);
    for (const r of recs) {
      expect(r.raw['prepared'] ?? '').toBe('');
      expect(r.raw['sends']).toBe('1');
    }
    const pool = await s.client.hgetall(`${s.env['QUEUE_PREFIX']}:nonce:BASE:${TEST_EVM_ADDRESS}`);
    expect(Number(pool['handoffs'])).toBeGreaterThan(30);
    expect(pool['holder']).toBeUndefined();
    expect(pool['prep_holder']).toBeUndefined();
  }, 150_000);

  it('a worker killed with a prepared permit saved: no row paid twice, none lost, nonces in order', async () => {
    // 200 ms per call: most of the time some transfer holds a prepared permit, saved and unsent.
    stack = await startStack({ latencyMs: 200 });
    const s = stack;
    const rows = baseRows(24, 'k');
    const ids = rows.map((r) => r.id as string);
    const { batchId } = await s.enqueue(rows);
    const doomed = s.startWorker();
    const caught = await waitFor(
      'a prepared permit saved after a few payments',
      async () => {
        if ((await s.counts(batchId)).submitted < 4) return undefined;
        const withPrepared = (await records(s, batchId, ids)).filter((r) => r.raw['prepared'] === '1');
        return withPrepared.length > 0 ? withPrepared : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 10 },
    );
    await doomed.kill9();
    // What the kill left: the prepared permit is recorded as never sent.
    const [left] = await records(s, batchId, [caught[0]!.id]);
    expect(left!.raw['send_state'] ?? '').not.toBe('sending');
    expect(left!.raw['uncertain'] ?? '0').toBe('0');
    const paidBefore = baseNonces(await s.ledger()).length;
    expect(paidBefore).toBeLessThan(24);

    s.startWorker();
    const doc = await s.waitComplete(batchId, 150_000);
    expect(doc.counts.queued + doc.counts.in_progress).toBe(0);
    const ledger = await s.ledger();
    const { paidTwice, problems } = checkLedger(doc, ledger);
    expect(paidTwice).toEqual([]);
    expect(problems).toEqual([]);
    // A send cut off by the kill is re-sent identically (the service replays its answer) or, had its
    // lease lapsed meanwhile, left for review; every other row is paid, the prepared one included.
    expect(doc.counts.submitted + doc.counts.needs_review).toBe(24);
    expect(doc.counts.needs_review).toBeLessThanOrEqual(1);
    expectInOrderWithoutGaps(baseNonces(ledger), ledger.filter((e) => e.kind === 'evm').length);
    const after = doc.transfers.find((t) => t.id === left!.id);
    expect(after?.state).toBe('submitted');
  }, 240_000);
});
