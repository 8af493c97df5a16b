import { afterEach, describe, expect, it } from 'vitest';
import type { EvmChain } from '../../src/domain/chains.ts';
import { metricKeys } from '../../src/metrics/worker-metrics.ts';
import type { LedgerEntry } from '../../src/sandbox/sandbox.ts';
import { waitFor, type SpawnedProcess } from '../helpers/cli.ts';
import { checkLedger, startStack, type Stack } from '../helpers/e2e.ts';
import { randomEvmAddress, TEST_EVM_ADDRESS, type Row } from '../helpers/fixtures.ts';

/**
 * Issue 13 as a user meets it: worker processes paying many rows of one (chain, owner) while the
 * RPC answers behind the service and the treasurer signs elsewhere with the same key, mid-batch.
 * Every row must end submitted and be paid once; each outside use costs at most one refusal.
 */

function rows(chain: EvmChain, n: number, tag: string): Row[] {
  const to = chain === 'BASE' ? 'ARB' : 'BASE';
  return Array.from({ length: n }, (_, i) => ({
    id: `${tag}-${i}`,
    from: chain,
    to,
    amount: `${20 + (i % 7)}.${String(i % 100).padStart(2, '0')}`,
    recipient: randomEvmAddress(),
  }));
}

const evmOf = (ledger: LedgerEntry[], chain: EvmChain) =>
  ledger.filter((e) => e.kind === 'evm' && e.from === chain);

/** Transfer requests the service refused (no faults here: every request either paid or was refused). */
async function refusals(stack: Stack): Promise<number> {
  const sent = (await stack.sandbox.admin.requests()).filter((r) => r.op === 'transfer').length;
  return sent - (await stack.ledger()).filter((e) => e.kind === 'evm').length;
}

/** Uses the owner's next nonce on `chain` elsewhere once `after` of our permits there went through. */
async function outsideUseAfter(stack: Stack, chain: EvmChain, after: number): Promise<bigint[]> {
  await waitFor(
    `${after} ${chain} payments`,
    async () => evmOf(await stack.ledger(), chain).length >= after,
    { timeoutMs: 60_000, intervalMs: 20 },
  );
  return (await stack.sandbox.admin.outsidePermit(chain, TEST_EVM_ADDRESS)).used;
}

/** Our nonces on `chain` went in order, and with the outside ones they leave no nonce unused. */
function expectNoncesInOrderWithoutGaps(ledger: LedgerEntry[], chain: EvmChain, outside: bigint[]) {
  const ours = evmOf(ledger, chain).map((e) => BigInt(e.nonce as string));
  for (let i = 1; i < ours.length; i++) expect(ours[i]).toBeGreaterThan(ours[i - 1] as bigint);
  const all = [...ours, ...outside].sort((a, b) => Number(a - b));
  expect(all).toEqual(all.map((_, i) => BigInt(i)));
}

describe('worker: permit nonces with a lagging RPC and an outside signer', () => {
  let stack: Stack | undefined;
  afterEach(async () => {
    await stack?.stop();
    stack = undefined;
  });

  it.each([
    { workers: 2, lagMs: 1_500, outside: [15], base: 40, other: 'POLYGON' as const },
    { workers: 3, lagMs: 3_000, outside: [15, 40], base: 60, other: 'ETH' as const },
  ])(
    '$workers workers, RPC $lagMs ms behind, outside permits after $outside: every row submitted, paid once',
    async ({ workers, lagMs, outside, base, other }) => {
      // The service answers in 10 ms; the chain the RPC shows is `lagMs` behind it.
      stack = await startStack({ latencyMs: 10, sandbox: { rpcNonceLagMs: lagMs } });
      const s = stack;
      const batch = [...rows('BASE', base, 'b'), ...rows(other, 12, 'o')];
      const { code, batchId } = await s.enqueue(batch);
      expect(code).toBe(0);
      const procs: SpawnedProcess[] = Array.from({ length: workers }, () => s.startWorker());
      const used: bigint[] = [];
      for (const after of outside) used.push(...(await outsideUseAfter(s, 'BASE', after)));
      const doc = await s.waitComplete(batchId, 120_000);

      expect(doc.counts).toMatchObject({ submitted: batch.length, failed: 0, needs_review: 0 });
      const ledger = await s.ledger();
      const { paidTwice, problems } = checkLedger(doc, ledger);
      expect(paidTwice).toEqual([]);
      expect(problems).toEqual([]);
      expectNoncesInOrderWithoutGaps(ledger, 'BASE', used);
      expectNoncesInOrderWithoutGaps(ledger, other, []);
      // At most one refusal per outside use, whatever the number of workers; and the uses did meet
      // the batch (a refusal happened), so the case was really exercised.
      const refused = await refusals(s);
      expect(refused).toBeGreaterThanOrEqual(1);
      expect(refused).toBeLessThanOrEqual(outside.length);
      // The operator sees it: a warning naming chain, owner and nonces, and the metric.
      const logs = procs.map((p) => p.output()).join('\n');
      expect(logs).toMatch(/"chain":"BASE","owner":"0x[0-9a-fA-F]{40}","nonce":"\d+".*"chainNonce":"\d+"/);
      expect(logs).toContain('permit nonce moved under the worker');
      await Promise.all(procs.map((p) => p.stop(10_000)));
      const counters = await s.client.hgetall(metricKeys(s.env['QUEUE_PREFIX'] as string).counters);
      expect(Number(counters['nonce_refusals|BASE'])).toBe(refused);
    },
  );

  it('a worker killed while it waits for the chain after a refusal leaves nothing stuck', async () => {
    stack = await startStack({ latencyMs: 10, sandbox: { rpcNonceLagMs: 3_000 } });
    const s = stack;
    const batch = rows('BASE', 30, 'k');
    const { batchId } = await s.enqueue(batch);
    const doomed = s.startWorker();
    const used = await outsideUseAfter(s, 'BASE', 10);
    // The transfer that meets the outside use is refused and waits for the RPC to catch up: the
    // pool shows it settling. Kill the worker right then.
    const pool = `${s.env['QUEUE_PREFIX']}:nonce:BASE:${TEST_EVM_ADDRESS}`;
    await waitFor(
      'a transfer settling a refused nonce',
      async () => Boolean(await s.client.hget(pool, 'settling')),
      {
        timeoutMs: 20_000,
        intervalMs: 20,
      },
    );
    await doomed.kill9();
    const paidBefore = evmOf(await s.ledger(), 'BASE').length;
    expect(paidBefore).toBeLessThan(30);
    s.startWorker();
    const doc = await s.waitComplete(batchId, 150_000);
    expect(doc.counts).toMatchObject({ submitted: 30, failed: 0, needs_review: 0 });
    const ledger = await s.ledger();
    const { paidTwice, problems } = checkLedger(doc, ledger);
    expect(paidTwice).toEqual([]);
    expect(problems).toEqual([]);
    expectNoncesInOrderWithoutGaps(ledger, 'BASE', used);
    expect(await s.client.hget(pool, 'holder')).toBeNull();
  });
});
