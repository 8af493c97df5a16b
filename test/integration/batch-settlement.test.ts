import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBatchReader } from '../../src/present/batch-status.ts';
import { type BatchSummary } from '../../src/present/batch-summary.ts';
import { createTransferStore, type TransferStore } from '../../src/store/transfer-store.ts';
import { movingTransfers } from '../../src/store/treasury-flows.ts';
import { redisForSuite } from '../helpers/redis.ts';
import { EVM, ingestHarness, type IngestHarness } from './ingest-fixtures.ts';

/**
 * The status document's money and settlement (docs/http-api.md): `totals` as planned, `totals.paid`
 * over submitted transfers only, `settled` once every submitted intent is final, and the intents'
 * counters — all kept by the store's scripts as transfers move, never computed by a scan.
 */
describe('batch settlement counters', () => {
  let suite: Awaited<ReturnType<typeof redisForSuite>>;
  let h: IngestHarness;
  let store: TransferStore;
  let reader: ReturnType<typeof createBatchReader>;

  beforeAll(async () => {
    suite = await redisForSuite();
    h = ingestHarness(suite.url);
    store = createTransferStore({ redis: h.redis, prefix: h.prefix });
    reader = createBatchReader({ redis: h.redis, prefix: h.prefix });
  });
  afterAll(async () => {
    await h?.close();
    await suite?.close();
  });

  /** A batch of rows `<batchId>-r0…` paying 10, 20, 30… USDC, each estimated at a fee of 0.1 × its index + 0.1. */
  async function batchOf(n: number, batchId: string): Promise<string[]> {
    const lines = Array.from(
      { length: n },
      (_, i) => `${batchId}-r${i},BASE,ARB,${10 * (i + 1)},${EVM[i % EVM.length]},row ${i}`,
    );
    const out = await h.enqueue(`id,from,to,amount,recipient,memo\n${lines.join('\n')}\n`, {
      batchId,
      allowDuplicates: true,
    });
    expect(out.status).toBe('enqueued');
    const ids = lines.map((_, i) => `${batchId}-r${i}`);
    for (const [i, id] of ids.entries()) {
      const fee = 100_000n * BigInt(i + 1);
      await store.saveEstimate(batchId, id, {
        fee: { total: fee, platform: fee - 10_000n, gas: 10_000n },
        netReceive: 10_000_000n * BigInt(i + 1) - fee,
      });
    }
    return ids;
  }

  async function submit(batchId: string, id: string): Promise<void> {
    await store.transition(batchId, id, { expected: ['queued'], to: 'in_progress' });
    const res = await store.transition(batchId, id, {
      expected: ['in_progress'],
      to: 'submitted',
      fields: { intentId: `int-${batchId}-${id}`, intentStatus: 'pending' },
    });
    expect(res.ok).toBe(true);
  }

  async function summary(batchId: string): Promise<BatchSummary> {
    const s = await reader.summary(batchId);
    if (!s) throw new Error(`no batch ${batchId}`);
    return s;
  }

  it('keeps money sums exact past 2^53 (added as decimal strings, never as Lua doubles)', async () => {
    const ids = await batchOf(2, 'big-1');
    const batchKey = `${h.prefix}:batch:big-1`;
    // A batch whose paid sum is past 2^53 already, and a transfer of 2^60 + 1 micro-USDC.
    await h.redis.hset(batchKey, 'paid_amount', '9007199254740993', 'paid_fee', '-5');
    await h.redis.hset(`${h.prefix}:t:big-1:${ids[0]!}`, 'amount', '1152921504606846977');
    const fee = 123_456_789_012_345_678n;
    const net = 1_029_464_715_594_501_299n;
    await store.saveEstimate('big-1', ids[0]!, {
      fee: { total: fee, platform: fee - 1n, gas: 1n },
      netReceive: net,
    });
    let b = await h.redis.hgetall(batchKey);
    // The batch's estimates: row 1's 0.2 USDC beside row 0's new one.
    expect(b['fee']).toBe((fee + 200_000n).toString());
    await submit('big-1', ids[0]!);
    b = await h.redis.hgetall(batchKey);
    expect([b['paid_amount'], b['paid_fee'], b['paid_net_receive']]).toEqual([
      (9_007_199_254_740_993n + 1_152_921_504_606_846_977n).toString(),
      (fee - 5n).toString(),
      net.toString(),
    ]);
    expect([b['n_submitted'], b['n_queued']]).toEqual(['1', '1']);
    // Out of `submitted` again: taken back to the digit.
    await store.transition('big-1', ids[0]!, { expected: ['submitted'], to: 'failed' });
    b = await h.redis.hgetall(batchKey);
    expect([b['paid_amount'], b['paid_fee'], b['paid_net_receive']]).toEqual(['9007199254740993', '-5', '0']);
    expect([b['n_submitted'], b['n_failed'], b['n_queued']]).toEqual(['0', '1', '1']);
  });

  it('counts paid totals over submitted transfers only, beside the planned totals', async () => {
    const ids = await batchOf(4, 'paid-1');
    await submit('paid-1', ids[0]!);
    await submit('paid-1', ids[2]!);
    await store.transition('paid-1', ids[1]!, {
      expected: ['queued'],
      to: 'failed',
      fields: { error: { code: 'refused', message: 'no' } },
    });
    await store.transition('paid-1', ids[3]!, { expected: ['queued'], to: 'in_progress' });
    const s = await summary('paid-1');
    // Planned: all four rows and their estimates; paid: rows 0 (10 USDC, fee 0.1) and 2 (30, 0.3).
    expect(s.totals).toEqual({
      amount: '100.00',
      fee: '1.00',
      net_receive: '99.00',
      paid: { amount: '40.00', fee: '0.40', net_receive: '39.60' },
    });
    expect(s.complete).toBe(false);
    expect(s.settled).toBe(false);
    expect(s.intents).toEqual({ complete: 0, failed: 0, untracked: 0, open: 2 });
  });

  it('reports nothing paid for a batch none of whose rows was sent', async () => {
    const ids = await batchOf(2, 'paid-none');
    for (const id of ids) {
      await store.transition('paid-none', id, {
        expected: ['queued'],
        to: 'cancelled',
        fields: { error: { code: 'cancelled', message: 'cancelled' } },
      });
    }
    const s = await summary('paid-none');
    expect(s.totals.paid).toEqual({ amount: '0.00', fee: '0.00', net_receive: '0.00' });
    expect(s.totals.amount).toBe('30.00');
    // Complete with no submitted intent: nothing is left to arrive.
    expect(s.complete).toBe(true);
    expect(s.settled).toBe(true);
  });

  it('settles once every submitted intent is final, and counts intents that failed after submission', async () => {
    const ids = await batchOf(3, 'settle-1');
    for (const id of ids) await submit('settle-1', id);
    let s = await summary('settle-1');
    expect(s.complete).toBe(true);
    expect(s.settled).toBe(false);

    const intent = (id: string) => `int-settle-1-${id}`;
    // Each save answers with the transfer as it was before it (its status recorded until then).
    const saved = async (id: string, status: string) =>
      await store.saveIntentStatus('settle-1', id, intent(id), { status });
    expect(await saved(ids[0]!, 'minted')).toMatchObject({
      intentId: intent(ids[0]!),
      intentStatus: 'pending',
    });
    expect(await saved(ids[0]!, 'complete')).toMatchObject({ intentStatus: 'minted', from: 'BASE' });
    expect(await saved(ids[1]!, 'failed')).toMatchObject({ id: ids[1], intentId: intent(ids[1]!) });
    s = await summary('settle-1');
    expect(s.intents).toEqual({ complete: 1, failed: 1, untracked: 0, open: 1 });
    expect(s.settled).toBe(false);

    // The same status recorded twice (a poll re-run) moves nothing.
    await store.saveIntentStatus('settle-1', ids[2]!, intent(ids[2]!), { status: 'complete' });
    await store.saveIntentStatus('settle-1', ids[2]!, intent(ids[2]!), { status: 'complete' });
    s = await summary('settle-1');
    expect(s.intents).toEqual({ complete: 2, failed: 1, untracked: 0, open: 0 });
    expect(s.settled).toBe(true);
    // Paid stays what was submitted: an intent that failed later is still counted as sent.
    expect(s.totals.paid.amount).toBe('60.00');
  });

  it('ignores a status for an intent the transfer no longer records', async () => {
    const ids = await batchOf(1, 'settle-other');
    await submit('settle-other', ids[0]!);
    expect(
      await store.saveIntentStatus('settle-other', ids[0]!, 'int-someone-else', { status: 'complete' }),
    ).toBeUndefined();
    const s = await summary('settle-other');
    expect(s.intents.open).toBe(1);
    expect(s.settled).toBe(false);
  });

  it('says settled null when the service has no status route for a submitted intent', async () => {
    const ids = await batchOf(2, 'settle-404');
    for (const id of ids) await submit('settle-404', id);
    await store.saveIntentStatus('settle-404', ids[0]!, `int-settle-404-${ids[0]}`, { status: 'complete' });
    await store.saveIntentStatus('settle-404', ids[1]!, `int-settle-404-${ids[1]}`, { untracked: true });
    const s = await summary('settle-404');
    expect(s.intents).toEqual({ complete: 1, failed: 0, untracked: 1, open: 0 });
    expect(s.settled).toBeNull();
  });

  it('moves paid totals and intents with a transfer an operator resolves out of needs_review', async () => {
    const ids = await batchOf(2, 'settle-review');
    await submit('settle-review', ids[0]!);
    await store.transition('settle-review', ids[1]!, { expected: ['queued'], to: 'in_progress' });
    await store.transition('settle-review', ids[1]!, {
      expected: ['in_progress'],
      to: 'needs_review',
      fields: { error: { code: 'outcome_unknown', message: 'lost' } },
    });
    let s = await summary('settle-review');
    expect(s.totals.paid.amount).toBe('10.00');
    expect(s.complete).toBe(true);
    await store.transition('settle-review', ids[1]!, {
      expected: ['needs_review'],
      to: 'submitted',
      fields: { intentId: 'int-resolved', intentStatus: 'complete' },
    });
    s = await summary('settle-review');
    expect(s.totals.paid).toEqual({ amount: '30.00', fee: '0.30', net_receive: '29.70' });
    expect(s.intents).toEqual({ complete: 1, failed: 0, untracked: 0, open: 1 });
  });

  it('keeps the paid fee equal to the estimate of a submitted transfer when it is estimated again', async () => {
    const ids = await batchOf(1, 'settle-reestimate');
    await submit('settle-reestimate', ids[0]!);
    await store.saveEstimate('settle-reestimate', ids[0]!, {
      fee: { total: 250_000n, platform: 240_000n, gas: 10_000n },
      netReceive: 9_750_000n,
    });
    const s = await summary('settle-reestimate');
    expect(s.totals.paid).toEqual({ amount: '10.00', fee: '0.25', net_receive: '9.75' });
    expect(s.totals.fee).toBe('0.25');
  });

  it('keeps amounts far above a Lua number exact', async () => {
    // 90 million USDC = 9e13 micro-USDC: counted as strings, never through a Lua number.
    const out = await h.enqueue(`id,from,to,amount,recipient\nbig,BASE,ARB,90000000.123457,${EVM[0]}\n`, {
      batchId: 'settle-big',
    });
    expect(out.status).toBe('enqueued');
    await store.saveEstimate('settle-big', 'big', {
      fee: { total: 123_456_789_012n, platform: 123_456_789_012n, gas: 0n },
      netReceive: 89_876_543_334_445n,
    });
    await submit('settle-big', 'big');
    const s = await summary('settle-big');
    expect(s.totals.paid).toEqual({
      amount: '90000000.123457',
      fee: '123456.789012',
      net_receive: '89876543.334445',
    });
  });
  it('moves the batch totals the same whether an estimate is saved alone or with a send mark, once the transfer moves', async () => {
    // Two like batches, enqueued unestimated: one saves its estimates alone, the other with the
    // fenced mark of a first send (what a run does, send-attempt.ts), only while it holds the lock.
    // The mark keeps its estimate pending (`est_pending`): the transfer shows its fee at once, the
    // batch's totals take it when the transfer moves next, in the step that moves the batch anyway.
    for (const batchId of ['est-alone', 'est-marked']) {
      const rows = `id,from,to,amount,recipient,memo\n${batchId}-0,BASE,ARB,10,${EVM[0]},a\n${batchId}-1,BASE,ARB,20,${EVM[1]},b\n${batchId}-2,BASE,ARB,30,${EVM[2]},c\n`;
      const out = await h.enqueue(rows, { batchId, allowDuplicates: true });
      expect(out.status).toBe('enqueued');
      expect((await summary(batchId)).totals.fee).toBeNull();
      for (const i of [0, 1, 2]) {
        await store.transition(batchId, `${batchId}-${i}`, { expected: ['queued'], to: 'in_progress' });
      }
    }
    const estimate = (n: bigint) => ({
      fee: { total: 100_000n * n, platform: 90_000n * n, gas: 10_000n * n },
      netReceive: 10_000_000n * n - 100_000n * n,
    });
    const key = (b: string) => `${h.prefix}:batch:${b}`;
    const totalsOf = async (b: string) =>
      await Promise.all(
        ['fee', 'net_receive', 'unestimated', 'paid_fee'].map((f) => h.redis.hget(key(b), f)),
      );
    const before = await totalsOf('est-marked');
    const token = 'run-token';
    const mark = { sendState: 'sending', sends: 1, uncertain: false } as const;
    // Without the lock nothing is written, the estimate neither.
    expect(
      (await store.saveFenced('est-marked', 'est-marked-1', mark, { token, estimate: estimate(2n) })).held,
    ).toBe(false);
    for (const i of [0, 1, 2]) {
      const id = `est-marked-${i}`;
      expect(await store.lock('est-marked', id, token, 30_000)).toBe(true);
      const saved = await store.saveFenced('est-marked', id, mark, {
        token,
        estimate: estimate(BigInt(i + 1)),
      });
      expect(saved.held).toBe(true);
    }
    // Marked: each record shows its fee (one write with the mark); the batch's totals are as before.
    const rec = await store.load('est-marked', 'est-marked-0');
    expect([rec?.feeTotal, rec?.netReceive, rec?.raw['send_state']]).toEqual([
      100_000n,
      9_900_000n,
      'sending',
    ]);
    expect(await totalsOf('est-marked')).toEqual(before);
    expect((await summary('est-marked')).totals.fee).toBeNull();
    // Rebalancing counts the money in flight by what each transfer will credit: the pending estimate's.
    const moving = (await movingTransfers(h.redis, h.prefix)).filter((t) => t.batchId === 'est-marked');
    expect(moving.map((t) => [t.id, t.netReceive])).toEqual(
      [0, 1, 2].map((i) => [`est-marked-${i}`, 10_000_000n * BigInt(i + 1) - 100_000n * BigInt(i + 1)]),
    );
    // An estimate carried again changes nothing; one saved alone replaces the pending one.
    await store.saveFenced('est-marked', 'est-marked-0', mark, { token, estimate: estimate(1n) });
    await store.saveEstimate('est-marked', 'est-marked-2', estimate(3n));
    expect(await h.redis.hexists(`${h.prefix}:t:est-marked:est-marked-2`, 'est_pending')).toBe(0);

    for (const i of [0, 1, 2])
      await store.saveEstimate('est-alone', `est-alone-${i}`, estimate(BigInt(i + 1)));
    // The moves: one submitted, one failed, one back to queued (a wait); the same in both batches.
    const moves = [
      { expected: ['in_progress'], to: 'submitted', fields: { intentId: 'int-x', intentStatus: 'pending' } },
      { expected: ['in_progress'], to: 'failed', fields: { error: { code: 'refused', message: 'no' } } },
      { expected: ['in_progress'], to: 'queued' },
    ] as const;
    for (const b of ['est-alone', 'est-marked']) {
      for (const [i, move] of moves.entries()) {
        expect((await store.transition(b, `${b}-${i}`, move)).ok).toBe(true);
      }
    }
    expect(await totalsOf('est-marked')).toEqual(await totalsOf('est-alone'));
    expect((await summary('est-marked')).totals).toMatchObject({ fee: '0.60', net_receive: '59.40' });
    expect((await summary('est-marked')).totals.paid).toMatchObject({ fee: '0.10' });
    for (const i of [0, 1, 2]) {
      const raw = (await store.load('est-marked', `est-marked-${i}`))?.raw;
      expect([raw?.['est_pending'], raw?.['fee_total']]).toEqual([undefined, String(100_000 * (i + 1))]);
    }
  });
});
