import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPublicClient, http, parseAbi, type Hex } from 'viem';
import { cctpFeeFor } from '../../src/domain/cctp.ts';
import { USDC_EVM, type EvmChain } from '../../src/domain/chains.ts';
import { parseUsdc } from '../../src/domain/money.ts';
import type { TransferRoad } from '../../src/domain/roads.ts';
import type { BatchStatus } from '../../src/present/batch-status.ts';
import { keys } from '../../src/store/keys.ts';
import { waitFor } from '../helpers/cli.ts';
import { startStack, type Stack } from '../helpers/e2e.ts';
import { randomEvmAddress, type Row } from '../helpers/fixtures.ts';

/**
 * The CCTP road end to end (docs/cctp.md "The flow"): batches enqueued through the CLI, worker
 * processes spawned through the CLI, the sandbox's CCTP v2 contracts on its anvils and its
 * attestation API. Judged by the chains: every recipient holds its amount less Circle's fee, and
 * each chain's USDC totalSupply moved by exactly what was burned from it and minted to it — a
 * double burn or a double mint would show there. One stack for every case.
 */

const ERC20 = parseAbi([
  'function balanceOf(address) view returns (uint256)',
  'function totalSupply() view returns (uint256)',
]);
const EVM: readonly EvmChain[] = ['ETH', 'BASE', 'ARB', 'POLYGON'];
/** The sandbox's fees (docs/sandbox.md): Fast 1 bps, Standard 0. */
const FEE_BPS: Record<Exclude<TransferRoad, 'service'>, number> = { cctp: 0, 'cctp-fast': 1 };

let stack: Stack;

beforeAll(async () => {
  stack = await startStack({
    sandbox: { cctpStandardDelayMs: 300, cctpFastDelayMs: 0, cctpRateLimitPerSecond: null },
  });
});
afterAll(async () => {
  await stack?.stop();
});

const anvil = (chain: EvmChain) =>
  createPublicClient({ transport: http(stack.sandbox.nodes.evm[chain].url as string) });
const usdc = (chain: EvmChain) => USDC_EVM.testnet[chain].usdc as Hex;
const balanceOf = (chain: EvmChain, who: string) =>
  anvil(chain).readContract({
    address: usdc(chain),
    abi: ERC20,
    functionName: 'balanceOf',
    args: [who as Hex],
  });
const supplyOf = (chain: EvmChain) =>
  anvil(chain).readContract({ address: usdc(chain), abi: ERC20, functionName: 'totalSupply' });
async function supplies(): Promise<Record<EvmChain, bigint>> {
  const out = {} as Record<EvmChain, bigint>;
  for (const c of EVM) out[c] = await supplyOf(c);
  return out;
}

/** EVM→EVM rows, each to a new recipient. */
function cctpRows(n: number, tag: string): Row[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `${tag}-${i}`,
    from: EVM[i % 4] as string,
    to: EVM[(i + 1) % 4] as string,
    amount: `${(i + 1) * 3}.25`,
    recipient: randomEvmAddress(),
  }));
}

/**
 * Enqueued through the CLI, then the batch and its records put on `via` (the road's choice at
 * enqueue, `--via`, lands separately: until then the test writes the stored field itself).
 */
async function enqueueVia(rows: Row[], via: TransferRoad): Promise<string> {
  const { code, batchId, stderr } = await stack.enqueue(rows);
  expect(code, stderr).toBe(0);
  const k = keys(stack.env['QUEUE_PREFIX'] as string);
  await stack.client.hset(k.batch(batchId), 'via', via);
  for (const r of rows) await stack.client.hset(k.transfer(batchId, r.id as string), 'via', via);
  return batchId;
}

function startWorker(extra: Record<string, string> = {}) {
  return stack.startWorker({ CCTP_API_URL: stack.sandbox.cctp.api_url, ...extra });
}

/** Waits until every transfer of the batch is submitted and minted (`intent_status` complete). */
async function waitMinted(batchId: string, timeoutMs = 120_000): Promise<BatchStatus> {
  await stack.waitComplete(batchId, timeoutMs);
  return await waitFor(
    `batch ${batchId} minted`,
    async () => {
      const doc = await stack.status(batchId);
      return doc.transfers.every((t) => t.intent_status === 'complete') ? doc : undefined;
    },
    { timeoutMs, intervalMs: 250 },
  );
}

/** Every row minted once to its recipient, less the road's fee; the supplies moved by the amounts. */
async function expectMintedOnce(
  rows: Row[],
  roads: Record<string, Exclude<TransferRoad, 'service'>>,
  before: Record<EvmChain, bigint>,
): Promise<void> {
  const expected: Record<EvmChain, bigint> = { ...before };
  for (const r of rows) {
    const amount = parseUsdc(r.amount);
    const fee = cctpFeeFor(amount, FEE_BPS[roads[r.id as string] as 'cctp']);
    expect(await balanceOf(r.to as EvmChain, r.recipient), `${r.id} minted to its recipient`).toBe(
      amount - fee,
    );
    expected[r.from as EvmChain] -= amount;
    expected[r.to as EvmChain] += amount;
  }
  expect(await supplies()).toEqual(expected);
}

describe('the CCTP road', () => {
  it('pays a batch through cctp and another through cctp-fast: each row burned once and minted once, with the cctp object shown', async () => {
    const std = cctpRows(4, 'std');
    const fast = cctpRows(4, 'fast');
    const before = await supplies();
    const a = await enqueueVia(std, 'cctp');
    const b = await enqueueVia(fast, 'cctp-fast');
    startWorker();
    const docA = await waitMinted(a);
    const docB = await waitMinted(b);
    for (const [doc, finality] of [
      [docA, 2000],
      [docB, 1000],
    ] as const) {
      for (const t of doc.transfers) {
        expect(t.state).toBe('submitted');
        expect(t.intent_id).toMatch(/^cctp:\d+:0x[0-9a-f]{64}$/);
        expect(t.cctp).toMatchObject({ finality, attestation: 'complete', burn_tx: t.tx_hash });
        expect(t.cctp?.message_nonce).toMatch(/^0x[0-9a-f]{64}$/);
        expect(t.cctp?.mint_tx).toMatch(/^0x[0-9a-f]{64}$/);
      }
    }
    const roads = Object.fromEntries([
      ...std.map((r) => [r.id, 'cctp'] as const),
      ...fast.map((r) => [r.id, 'cctp-fast'] as const),
    ]);
    await expectMintedOnce([...std, ...fast], roads, before);
  });
});
