import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EvmChain } from '../../src/domain/chains.ts';
import type { WalletsReport } from '../../src/ops/wallets.ts';
import type { BatchStatus } from '../../src/present/batch-status.ts';
import { ownerReserveKey } from '../../src/store/owner-balance.ts';
import { runCli, waitFor } from '../helpers/cli.ts';
import { checkLedger, startStack, type Stack } from '../helpers/e2e.ts';
import { randomEvmAddress, type Row } from '../helpers/fixtures.ts';
import { OTHER_EVM_KEY, TEST_EVM_KEY } from '../helpers/sandbox.ts';
import { startServe, type ServeProcess } from '../helpers/serve.ts';

const HOOK = 'hook-token-owners-0123456789';
/** anvil's dev key 2 (public, never funded on a real chain): the third treasury owner. */
const THIRD_EVM_KEY = '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a' as const;
const KEYS = [TEST_EVM_KEY, OTHER_EVM_KEY, THIRD_EVM_KEY];
const [A, B, C] = KEYS.map((k) => privateKeyToAccount(k).address) as [string, string, string];

/** What each owner holds per chain before the run (USDC). */
const START: Record<EvmChain, [number, number, number]> = {
  // A covers only the 20 row, C none: the 30 and 40 go to B.
  BASE: [25, 1000, 5],
  ETH: [500, 300, 0],
  ARB: [100, 100, 100],
  POLYGON: [0, 0, 0],
};
const ROWS: Row[] = [
  { id: 'o-base-20', from: 'BASE', to: 'ARB', amount: '20', recipient: randomEvmAddress() },
  { id: 'o-base-30', from: 'BASE', to: 'ETH', amount: '30', recipient: randomEvmAddress() },
  { id: 'o-base-40', from: 'BASE', to: 'POLYGON', amount: '40', recipient: randomEvmAddress() },
  { id: 'o-arb-10', from: 'ARB', to: 'BASE', amount: '10', recipient: randomEvmAddress() },
];
/** A reservation written as a worker would for a transfer in flight on POLYGON, owner C: 12.5 USDC. */
const PLANTED = { chain: 'POLYGON' as const, holder: 'elsewhere/t1', micro: 12_500_000n };

const micro = (usdc: string) => BigInt(Math.round(Number(usdc) * 1_000_000));
const usdc = (m: bigint) => (Number(m) / 1_000_000).toFixed(2);

/**
 * Several treasury owners as an operator sees them: `wallets` lists every owner with its balance,
 * permit nonce, nonce pool and what is in flight per chain; `/metrics` has per-owner series. One
 * worker run with three keys against the sandbox's chains.
 */
describe('several treasury owners: wallets and /metrics after a worker run', () => {
  let stack: Stack;
  let api: ServeProcess;
  let doc: BatchStatus;
  const prefix = () => stack.env['QUEUE_PREFIX'] as string;
  /** What the status document says each owner paid on `chain`: count and micro-USDC. */
  const paidBy = (owner: string, chain: string) => {
    const ts = doc.transfers.filter((t) => t.from === chain && t.owner === owner);
    return { n: ts.length, amount: ts.reduce((s, t) => s + micro(t.amount), 0n) };
  };

  beforeAll(async () => {
    stack = await startStack({ env: { HOOK_TOKEN: HOOK, EVM_PRIVATE_KEY: KEYS.join(',') } });
    for (const [chain, amounts] of Object.entries(START)) {
      for (const [i, owner] of [A, B, C].entries())
        await stack.sandbox.admin.setBalance(chain, owner, String(amounts[i]));
    }
    await stack.client.hset(
      ownerReserveKey(prefix(), PLANTED.chain, C),
      PLANTED.holder,
      `${PLANTED.micro}||`,
    );
    const { code, batchId } = await stack.enqueue(ROWS);
    expect(code).toBe(0);
    const worker = stack.startWorker();
    doc = await stack.waitComplete(batchId, 90_000);
    await worker.stop(10_000);
    api = await startServe(stack.env);
  }, 180_000);
  afterAll(async () => {
    await api?.stop();
    await stack?.stop();
  });

  it('pays each row from one owner whose balance covers it, exactly once', async () => {
    expect(doc.counts.submitted).toBe(4);
    expect(checkLedger(doc, await stack.ledger()).problems).toEqual([]);
    const ownerOf = (id: string) => doc.transfers.find((t) => t.id === id)?.owner;
    expect(ownerOf('o-base-30')).toBe(B);
    expect(ownerOf('o-base-40')).toBe(B);
    expect([A, B]).toContain(ownerOf('o-base-20'));
    expect([A, B, C]).toContain(ownerOf('o-arb-10'));
  });

  it('wallets lists every owner in order with its balance, nonce, pool and in-flight amount per chain', async () => {
    const res = await runCli(['wallets'], stack.env);
    expect(res.code, res.stderr).toBe(0);
    const text = res.stdout;
    expect(text).toContain('EVM owners  3 (in configured order');
    // One section per owner, in key order, each with its own table.
    const sections = text.split(/^EVM owner {2}/m).slice(1);
    expect(sections.map((s) => s.split('\n')[0])).toEqual([
      `${A}  (1 of 3)`,
      `${B}  (2 of 3)`,
      `${C}  (3 of 3)`,
    ]);
    const cells = (section: string, chain: string) =>
      section
        .split('\n')
        .find((l) => l.startsWith(`${chain} `))
        ?.split(/\s{2,}/);
    for (const [i, owner] of [A, B, C].entries()) {
      const section = sections[i] as string;
      for (const chain of ['BASE', 'ARB', 'ETH'] as const) {
        const paid = paidBy(owner, chain);
        const balance = usdc(BigInt(START[chain][i] as number) * 1_000_000n - paid.amount);
        // chain, rpc, permit nonce, balance, pool next, in flight (every payment is mined by now).
        expect(cells(section, chain)?.slice(0, 6), `${owner} ${chain}`).toEqual([
          chain,
          'yes',
          String(paid.n),
          balance,
          String(paid.n),
          '0.00',
        ]);
      }
    }
    // The reservation of a transfer in flight shows on its owner and chain only.
    expect(cells(sections[2] as string, 'POLYGON')?.[5]).toBe('12.50 (1 transfer)');
    expect(cells(sections[0] as string, 'POLYGON')?.[5]).toBe('0.00');
    // Across the owners: 1030 on BASE less the 90 paid.
    const totals = text.split(/^all 3 owners$/m)[1] ?? '';
    expect(cells(totals, 'BASE')).toEqual(['BASE', '940.00', '0.00']);
    expect(cells(totals, 'POLYGON')).toEqual(['POLYGON', '0.00', '12.50']);

    const json = await runCli(['wallets', '--json'], stack.env);
    expect(json.code, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout) as WalletsReport;
    // The first owner where one owner was before; every owner in `owners`.
    expect(report.evm?.address).toBe(A);
    expect(report.evm?.chains).toEqual(report.evm?.owners[0]?.chains);
    expect(report.evm?.owners.map((o) => [o.position, o.address])).toEqual([
      [1, A],
      [2, B],
      [3, C],
    ]);
    const baseOfB = report.evm?.owners[1]?.chains.find((c) => c.chain === 'BASE');
    expect(baseOfB).toMatchObject({
      rpc: true,
      permit_nonce: String(paidBy(B, 'BASE').n),
      usdc_balance: usdc(1000n * 1_000_000n - paidBy(B, 'BASE').amount),
      nonce_pool: { next: String(paidBy(B, 'BASE').n), holder: null },
      in_flight: '0.00',
      in_flight_transfers: 0,
    });
    expect(report.evm?.owners[2]?.chains.find((c) => c.chain === 'POLYGON')).toMatchObject({
      in_flight: '12.50',
      in_flight_transfers: 1,
    });
    expect(report.evm?.totals.find((t) => t.chain === 'BASE')).toEqual({
      chain: 'BASE',
      rpc: true,
      usdc_balance: '940.00',
      in_flight: '0.00',
    });
    for (const out of [res.stdout, res.stderr, json.stdout, json.stderr])
      for (const k of KEYS) expect(out.toLowerCase()).not.toContain(k.slice(2));
  });

  it('/metrics has transfers, lease waits and the in-flight amount per chain and owner', async () => {
    const series = (name: string, chain: string, owner: string, text: string) => {
      const m = new RegExp(`^${name}\\{chain="${chain}",owner="${owner}"\\} (\\S+)$`, 'm').exec(text);
      return m ? Number(m[1]) : undefined;
    };
    const text = await waitFor(
      '/metrics to show every owner transfer',
      async () => {
        const res = await api.call('/metrics', { token: HOOK });
        const body = await res.text();
        const total = [A, B, C].reduce(
          (s, o) => s + (series('usdc_batch_owner_transfers_total', 'BASE', o, body) ?? 0),
          0,
        );
        return res.status === 200 && total === 3 ? body : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 250 },
    );
    expect(text).toContain('# TYPE usdc_batch_owner_transfers_total counter');
    expect(text).toContain('# TYPE usdc_batch_owner_lease_waits_total counter');
    expect(text).toContain('# TYPE usdc_batch_owner_in_flight_micro_usdc gauge');
    for (const owner of [A, B, C]) {
      for (const chain of ['ETH', 'BASE', 'ARB', 'POLYGON']) {
        // Every (chain, owner) the worker registered has its series, 0 until it counts something.
        expect(series('usdc_batch_owner_transfers_total', chain, owner, text), `${owner} ${chain}`).toBe(
          paidBy(owner, chain).n,
        );
        expect(series('usdc_batch_owner_lease_waits_total', chain, owner, text)).toBeGreaterThanOrEqual(0);
        const inFlight = series('usdc_batch_owner_in_flight_micro_usdc', chain, owner, text);
        // Reservations of landed payments are dropped lazily (at the owner's next choice): at most
        // what the owner paid on the chain, plus what was planted.
        const planted = owner === C && chain === PLANTED.chain ? Number(PLANTED.micro) : 0;
        expect(inFlight).toBeGreaterThanOrEqual(planted);
        expect(inFlight).toBeLessThanOrEqual(planted + Number(paidBy(owner, chain).amount));
      }
    }
    expect(series('usdc_batch_owner_in_flight_micro_usdc', 'POLYGON', C, text)).toBe(12_500_000);
  });
});
