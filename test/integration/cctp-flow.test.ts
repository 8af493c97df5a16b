import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAbiItem, type Hex } from 'viem';
import { CCTP_V2_CONTRACTS, cctpFeeFor } from '../../src/domain/cctp.ts';
import type { EvmChain } from '../../src/domain/chains.ts';
import { formatUsdc, parseUsdc } from '../../src/domain/money.ts';
import type { TransferRoad } from '../../src/domain/roads.ts';
import type { BatchStatus } from '../../src/present/batch-status.ts';
import { keys } from '../../src/store/keys.ts';
import { nextNonce, readOwnerTx } from '../../src/store/owner-txs.ts';
import { createTransferStore } from '../../src/store/transfer-store.ts';
import type { SpawnedProcess } from '../helpers/cli.ts';
import { runCli, waitFor } from '../helpers/cli.ts';
import { startStack, waitsCounted, type Stack } from '../helpers/e2e.ts';
import { ERC20, SANDBOX_EVM, sandboxUsdc } from '../helpers/sandbox-usdc.ts';
import {
  csvOf,
  randomEvmAddress,
  randomSolanaAddress,
  TEST_EVM_ADDRESS,
  type Row,
} from '../helpers/fixtures.ts';

/**
 * The CCTP road end to end (docs/cctp.md "The flow"): batches enqueued through the CLI, worker
 * processes spawned through the CLI, the sandbox's CCTP v2 contracts on its anvils and its
 * attestation API. Judged by the chains: every recipient holds its amount less Circle's fee, and
 * each chain's USDC totalSupply moved by exactly what was burned from it and minted to it — a
 * double burn or a double mint would show there. One stack for every case.
 */

const EVM = SANDBOX_EVM;
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

const { anvil, usdc, balanceOf, supplies } = sandboxUsdc(() => stack.sandbox.nodes);
const APPROVAL = parseAbiItem(
  'event Approval(address indexed owner, address indexed spender, uint256 value)',
);
const allowanceOf = (chain: EvmChain, spender: Hex) =>
  anvil(chain).readContract({
    address: usdc(chain),
    abi: ERC20,
    functionName: 'allowance',
    args: [TEST_EVM_ADDRESS as Hex, spender],
  });

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

/**
 * A policy file: BASE below its min by 100 (target 200 above its position `base`), ETH with 1,000 to
 * spare above its target (`eth` its position).
 */
function policyOn(name: string, via: TransferRoad, base: bigint, eth: bigint): string {
  const file = join(stack.dir, `${name}.yaml`);
  const usdcOf = (v: bigint) => formatUsdc(v < 0n ? 0n : v);
  writeFileSync(
    file,
    [
      `name: ${name}`,
      `via: ${via}`,
      'chains:',
      `  BASE: { min: ${usdcOf(base + 100_000_000n)}, target: ${usdcOf(base + 200_000_000n)} }`,
      `  ETH: { target: ${usdcOf(eth - 1_000_000_000n)} }`,
      '',
    ].join('\n'),
  );
  return file;
}

let running: SpawnedProcess[] = [];

function startWorker(extra: Record<string, string> = {}): SpawnedProcess {
  const w = stack.startWorker({ CCTP_API_URL: stack.sandbox.cctp.api_url, ...extra });
  running.push(w);
  return w;
}

/** Each case starts with no worker of an earlier case running. */
async function stopWorkers(): Promise<void> {
  await Promise.all(running.map((w) => w.stop(10_000)));
  running = [];
}

const prefix = () => stack.env['QUEUE_PREFIX'] as string;
const cctpRequests = async () => (await stack.sandbox.admin.requests()).filter((r) => r.op === 'cctp').length;

/** The number of transfers of the batch whose record says `field` is set. */
async function countWith(batchId: string, rows: Row[], field: string): Promise<number> {
  const k = keys(prefix());
  let n = 0;
  for (const r of rows) if (await stack.client.hexists(k.transfer(batchId, r.id as string), field)) n++;
  return n;
}

/** Waits until every transfer of the batch is submitted and minted (`intent_status` complete). */
async function waitMinted(batchId: string, timeoutMs = 120_000): Promise<BatchStatus> {
  try {
    await stack.waitComplete(batchId, timeoutMs);
    return await waitFor(
      `batch ${batchId} minted`,
      async () => {
        const doc = await stack.status(batchId);
        return doc.transfers.every((t) => t.intent_status === 'complete') ? doc : undefined;
      },
      { timeoutMs, intervalMs: 250 },
    );
  } catch (err) {
    // What each transfer was waiting for, and the workers' last words: a stuck row says why.
    const doc = await stack.status(batchId).catch(() => undefined);
    for (const t of doc?.transfers ?? [])
      console.error(t.id, t.state, t.intent_status, t.wait_reason, JSON.stringify(t.evidence.slice(-6)));
    for (const w of running) console.error(w.output().slice(-4000));
    await showOwnerCalls().catch((e: unknown) => console.error('owner calls unreadable:', e));
    throw err;
  }
}

/**
 * For a stuck batch: per chain, the owner's nonce (mined and pending) beside the next the workers
 * would give, each call given a nonce the chain has not mined (a call never signed there holds every
 * later one of the owner on that chain), and which intents the workers follow when.
 */
async function showOwnerCalls(): Promise<void> {
  const lines: string[] = [];
  for (const chain of EVM as EvmChain[]) {
    const at = { prefix: prefix(), chain, owner: TEST_EVM_ADDRESS };
    const count = (blockTag: 'latest' | 'pending') =>
      anvil(chain).getTransactionCount({ address: TEST_EVM_ADDRESS as Hex, blockTag });
    const [mined, pending, next] = await Promise.all([
      count('latest'),
      count('pending'),
      nextNonce(stack.client, at),
    ]);
    lines.push(`${chain}: owner nonce ${mined} mined, ${pending} pending; next to give ${next ?? 'none'}`);
    for (let n = BigInt(mined); next !== undefined && n < next; n++) {
      const t = await readOwnerTx(stack.client, at, n);
      const unmined = t && !t.done ? t : undefined;
      const sent = unmined?.sent
        ? `v${unmined.sent.version} sent at block ${unmined.sent.block}`
        : 'not sent';
      lines.push(
        `  nonce ${n}: ${t ? `${t.callId} to ${t.to}: ${t.versions.length} signed, ${sent}, done ${t.done?.hash ?? 'no'}, used seen ${unmined?.usedSeenAt ?? 'no'}${t.filled ? ', given up' : ''}` : 'no record'}`,
      );
    }
  }
  const follow = await stack.client.zrange(keys(prefix()).follow, 0, -1, 'WITHSCORES');
  lines.push(`followed (member, next look ms; now ${Date.now()}): ${follow.join(' ')}`);
  console.error(lines.join('\n'));
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
  it("enqueue --dry-run and rebalance --dry-run on a CCTP road show Circle's fee (its fee route), the gas the owners'", async () => {
    // No worker has published the owners' addresses yet: the plan is told them.
    const env = {
      ...stack.env,
      CCTP_API_URL: stack.sandbox.cctp.api_url,
      EVM_OWNER_ADDRESSES: TEST_EVM_ADDRESS,
    };
    const rows = cctpRows(4, 'dry');
    const file = join(stack.dir, 'dry-cctp.csv');
    writeFileSync(file, csvOf(rows));
    const asked = await cctpRequests();
    const res = await runCli(['enqueue', file, '--dry-run', '--json', '--via', 'cctp-fast'], env);
    expect(res.code, res.stderr).toBe(0);
    const doc = JSON.parse(res.stdout) as {
      via: string;
      gas_paid_by: string;
      totals: { amount: string; fee: string; net_receive: string };
    };
    const amount = rows.reduce((n, r) => n + parseUsdc(r.amount), 0n);
    const fee = rows.reduce((n, r) => n + cctpFeeFor(parseUsdc(r.amount), FEE_BPS['cctp-fast']), 0n);
    expect(fee).toBeGreaterThan(0n);
    expect(doc).toMatchObject({ via: 'cctp-fast', gas_paid_by: 'owner' });
    expect(doc.totals).toEqual({
      amount: formatUsdc(amount),
      fee: formatUsdc(fee),
      net_receive: formatUsdc(amount - fee),
    });
    // Circle's fee route was asked, once per route (four routes), not once per row through the service.
    expect((await cctpRequests()) - asked).toBe(4);
    const text = await runCli(['enqueue', file, '--dry-run', '--via', 'cctp'], env);
    expect(text.stdout).toMatch(/fee +0\.00 USDC \(Circle's CCTP fee, Standard: finality 2000\)/);
    expect(text.stdout).toMatch(/gas +paid by the owners in native gas/);

    // The plan of a policy on cctp-fast: a move from ETH's spare to BASE, priced by Circle's fee.
    // Nothing is in flight yet: each chain's position is the owner's balance on it.
    const policy = policyOn(
      'dry-cctp',
      'cctp-fast',
      await balanceOf('BASE', TEST_EVM_ADDRESS),
      await balanceOf('ETH', TEST_EVM_ADDRESS),
    );
    const plan = await runCli(['rebalance', policy, '--dry-run', '--json'], env);
    expect(plan.code, plan.stderr).toBe(0);
    const planned = JSON.parse(plan.stdout) as {
      via: string;
      gas_paid_by: string;
      moves: { from: string; to: string; amount: string; fee: string; net_receive: string }[];
    };
    expect(planned).toMatchObject({
      via: 'cctp-fast',
      gas_paid_by: 'owner',
      moves: [{ from: 'ETH', to: 'BASE' }],
    });
    const move = planned.moves[0]!;
    const moveFee = cctpFeeFor(parseUsdc(move.amount), FEE_BPS['cctp-fast']);
    expect(move.fee).toBe(formatUsdc(moveFee));
    expect(parseUsdc(move.net_receive)).toBe(parseUsdc(move.amount) - moveFee);
    expect(parseUsdc(move.net_receive)).toBeGreaterThanOrEqual(200n * 1_000_000n);
  });

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
        // Minted, its record holds short values only (the 73-character intent id in two fields),
        // so Redis keeps it in the compact encoding (docs/data-model.md "Memory").
        const recordKey = keys(prefix()).transfer(doc.batch_id, t.id);
        const long = Object.entries(await stack.client.hgetall(recordKey)).filter(([, v]) => v.length > 64);
        expect(long, t.id).toEqual([]);
        expect(await stack.client.object('ENCODING', recordKey), t.id).toBe('listpack');
      }
    }
    const roads = Object.fromEntries([
      ...std.map((r) => [r.id, 'cctp'] as const),
      ...fast.map((r) => [r.id, 'cctp-fast'] as const),
    ]);
    await expectMintedOnce([...std, ...fast], roads, before);
  });

  it("one approval covers a batch's rows from one chain: the allowance is what they need, used up by their burns", async () => {
    await stopWorkers();
    const chain: EvmChain = 'BASE';
    const rows: Row[] = ['ETH', 'ARB', 'POLYGON'].map((to, i) => ({
      id: `approve-${i}`,
      from: chain,
      to,
      amount: `${i + 2}.5`,
      recipient: randomEvmAddress(),
    }));
    const roads = Object.fromEntries(rows.map((r) => [r.id, 'cctp-fast'] as const));
    const messenger = CCTP_V2_CONTRACTS.testnet[chain].tokenMessenger;
    expect(await allowanceOf(chain, messenger)).toBe(0n);
    const fromBlock = await anvil(chain).getBlockNumber();
    const before = await supplies();
    const batchId = await enqueueVia(rows, 'cctp-fast');
    startWorker();
    await waitMinted(batchId);
    await expectMintedOnce(rows, roads, before);
    const approvals = await anvil(chain).getLogs({
      address: usdc(chain),
      event: APPROVAL,
      args: { owner: TEST_EVM_ADDRESS as Hex, spender: messenger },
      fromBlock,
    });
    // Bounded: exactly the rows' sum (never unlimited), and nothing left once they are burned.
    expect(approvals.map((l) => l.args.value)).toEqual([rows.reduce((n, r) => n + parseUsdc(r.amount), 0n)]);
    expect(await allowanceOf(chain, messenger)).toBe(0n);
  });

  it("rows queued behind one owner's lease wait for it inside their jobs: their jobs are not handed back each second", async () => {
    await stopWorkers();
    // Five rows of one (chain, owner): while one approves and burns, the others wait for its lease
    // (docs/cctp.md "The flow"), woken by its release; a job handed back for the lease
    // (`nonce_lease`) comes only after a long wait, not once a second for every row queued.
    const rows: Row[] = Array.from({ length: 5 }, (_, i) => ({
      id: `queued-${i}`,
      from: 'BASE',
      to: 'ARB',
      amount: `${i + 1}.25`,
      recipient: randomEvmAddress(),
    }));
    const roads = Object.fromEntries(rows.map((r) => [r.id, 'cctp-fast'] as const));
    const handedBack = () => waitsCounted(stack.client, prefix(), 'nonce_lease');
    const before = await supplies();
    const handedBefore = await handedBack();
    const batchId = await enqueueVia(rows, 'cctp-fast');
    startWorker();
    await waitMinted(batchId);
    await expectMintedOnce(rows, roads, before);
    await stopWorkers(); // its counters flushed
    expect(await handedBack()).toBeLessThan(handedBefore + rows.length);
  });

  it('a needs_review burn: --not-sent refused (a signed burn has no expiry), --submitted with its burn mints it', async () => {
    await stopWorkers();
    // Burned, not yet attested: the answer of the burn is then taken as lost (needs_review).
    await stack.sandbox.admin.configure({ cctpNotFoundMs: 600_000 });
    const rows = cctpRows(1, 'review');
    const roads = { [rows[0]!.id as string]: 'cctp-fast' as const };
    const before = await supplies();
    const batchId = await enqueueVia(rows, 'cctp-fast');
    startWorker();
    const t = (await stack.waitComplete(batchId)).transfers[0]!;
    expect(t.state).toBe('submitted');
    await stopWorkers();
    const store = createTransferStore({ redis: stack.client, prefix: prefix() });
    const lost = await store.transition(batchId, t.id, {
      expected: ['submitted'],
      to: 'needs_review',
      fields: {
        intentId: null,
        intentStatus: null,
        error: { code: 'outcome_unknown', message: 'test: the burn answer lost' },
      },
    });
    expect(lost.ok).toBe(true);
    await stack.sandbox.admin.configure({ cctpNotFoundMs: 0 });
    const resolve = (args: string[]) => runCli(['resolve', batchId, t.id, ...args], stack.env);
    const notSent = await resolve(['--not-sent']);
    expect(notSent.code, notSent.stderr).toBe(1);
    expect(notSent.stderr).toMatch(/no expiry/);
    const domain = t.intent_id!.split(':')[1]!;
    const wrong = await resolve(['--submitted', `cctp:${Number(domain) + 1}:${t.tx_hash}`]);
    expect(wrong.code, wrong.stderr).toBe(2);
    expect(wrong.stderr).toMatch(/resolved with its burn/);
    const ok = await resolve(['--submitted', `cctp:${domain}:${t.tx_hash}`]);
    expect(ok.code, ok.stderr).toBe(0);
    startWorker();
    const doc = await waitMinted(batchId);
    expect(doc.transfers[0]).toMatchObject({
      state: 'submitted',
      tx_hash: t.tx_hash,
      intent_status: 'complete',
    });
    await expectMintedOnce(rows, roads, before);
  });

  it('after kill -9 of its workers mid-burn and mid-mint, and two workers minting at once, burns and mints every row exactly once', async () => {
    await stopWorkers();
    const rows = cctpRows(10, 'kill');
    const roads = Object.fromEntries(rows.map((r) => [r.id, 'cctp-fast'] as const));
    const before = await supplies();
    const batchId = await enqueueVia(rows, 'cctp-fast');
    // Killed once a burn is saved (its transaction signed and about to be sent, or sent), before
    // every row is burned: the owner's lease and the transfer's lock are left behind.
    const first = startWorker();
    await waitFor('a burn saved', async () => (await countWith(batchId, rows, 'cctp_burn_tx')) >= 3, {
      timeoutMs: 60_000,
      intervalMs: 20,
    });
    await first.kill9();
    // Killed again once a mint is on its way (a message attested for a row), before all are minted.
    const second = startWorker();
    await waitFor('an attestation seen', async () => (await countWith(batchId, rows, 'cctp_nonce')) >= 1, {
      timeoutMs: 90_000,
      intervalMs: 20,
    });
    await second.kill9();
    // Two workers finish it: both follow the intents, both may step one message's mint.
    startWorker();
    startWorker();
    const doc = await waitMinted(batchId, 180_000);
    expect(doc.transfers.map((t) => [t.id, t.state])).toEqual(rows.map((r) => [r.id, 'submitted']));
    await expectMintedOnce(rows, roads, before);
    // Two resumes after kill -9: each waits out the dead worker's transfer locks and BullMQ's stall check.
  }, 300_000);

  it('mints through an attestation that 404s for a while and one that expires before its mint (re-attested)', async () => {
    await stopWorkers();
    await stack.sandbox.admin.configure({ cctpNotFoundMs: 3_000, cctpExpiredAttestations: 2 });
    const rows = cctpRows(4, 'slow');
    const roads = Object.fromEntries(rows.map((r) => [r.id, 'cctp'] as const));
    const before = await supplies();
    const batchId = await enqueueVia(rows, 'cctp');
    startWorker();
    const doc = await waitMinted(batchId);
    await stack.sandbox.admin.configure({ cctpNotFoundMs: 0, cctpExpiredAttestations: 0 });
    expect(doc.counts.submitted).toBe(4);
    await expectMintedOnce(rows, roads, before);
  });

  it('a 429 from the attestation API stops every worker asking (a shared pause); the batch goes on once it ends', async () => {
    await stopWorkers();
    await stack.sandbox.admin.configure({ faultScript: [{ op: 'cctp', fault: 'rate_limit' }] });
    const rows = cctpRows(2, 'limited');
    const roads = Object.fromEntries(rows.map((r) => [r.id, 'cctp-fast'] as const));
    const before = await supplies();
    const batchId = await enqueueVia(rows, 'cctp-fast');
    startWorker();
    startWorker();
    const paused = `${prefix()}:cctp:paused`;
    await waitFor(
      'the shared pause',
      async () => ((await stack.client.pttl(paused)) > 0 ? true : undefined),
      {
        timeoutMs: 60_000,
        intervalMs: 20,
      },
    );
    // Five minutes, for every worker.
    expect(await stack.client.pttl(paused)).toBeGreaterThan(4 * 60_000);
    try {
      // While the key stands nobody asks: once every transfer met the pause, and met it twice more
      // (any request begun before the pause has landed by then), no request reached the API.
      const waits = () => waitsCounted(stack.client, prefix(), 'rate_limit');
      await waitFor('a transfer waiting on the pause', async () => (await waits()) >= 2, {
        timeoutMs: 30_000,
        intervalMs: 50,
      });
      const asked = await cctpRequests();
      const seen = await waits();
      await waitFor('the transfers to meet the pause again', async () => (await waits()) >= seen + 2, {
        timeoutMs: 30_000,
        intervalMs: 50,
      });
      expect(await cctpRequests()).toBe(asked);
      expect((await stack.status(batchId)).transfers.some((t) => t.intent_status === 'complete')).toBe(false);
    } finally {
      // The five minutes pass (the key is what every worker reads).
      await stack.client.del(paused);
    }
    await waitMinted(batchId);
    await expectMintedOnce(rows, roads, before);
  });

  it('a burn that reverts moved nothing: failed with the receipt as evidence, and nothing burned or minted', async () => {
    await stopWorkers();
    const owner = TEST_EVM_ADDRESS;
    const held = await balanceOf('POLYGON', owner);
    // The owner holds no USDC on POLYGON: its burn reverts on chain (the approve goes through).
    await stack.sandbox.admin.setBalance('POLYGON', owner, '0');
    const rows: Row[] = [
      { id: 'revert-0', from: 'POLYGON', to: 'ETH', amount: '5.00', recipient: randomEvmAddress() },
    ];
    const before = await supplies();
    const batchId = await enqueueVia(rows, 'cctp');
    startWorker();
    const doc = await stack.waitComplete(batchId);
    await stack.sandbox.admin.setBalance('POLYGON', owner, (Number(held) / 1e6).toFixed(6));
    const t = doc.transfers[0]!;
    expect(t.state).toBe('failed');
    expect(t.error?.code).toBe('cctp_burn_reverted');
    expect(t.evidence.some((l) => /mined with status 0/.test(l))).toBe(true);
    expect(await balanceOf('ETH', rows[0]!.recipient)).toBe(0n);
    const after = await supplies();
    expect(after).toEqual({ ...before, POLYGON: after.POLYGON });
  });

  it('a gas price above MAX_GAS_GWEI_<CHAIN> waits with that reason, and goes once the cap allows it', async () => {
    await stopWorkers();
    const rows = cctpRows(1, 'cap');
    const roads = Object.fromEntries(rows.map((r) => [r.id, 'cctp'] as const));
    const before = await supplies();
    const batchId = await enqueueVia(rows, 'cctp');
    const chain = rows[0]!.from;
    const capped = startWorker({ [`MAX_GAS_GWEI_${chain}`]: '0.000001' });
    const waiting = await waitFor(
      'the transfer waiting on the gas cap',
      async () => (await stack.status(batchId)).transfers.find((t) => /gas/i.test(t.wait_reason ?? '')),
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    expect(waiting.state).toBe('in_progress');
    await capped.stop(10_000);
    startWorker();
    await waitMinted(batchId);
    await expectMintedOnce(rows, roads, before);
  });

  it('a SOLANA row that reached the CCTP road (enqueue refuses it) fails with a clear code, nothing signed', async () => {
    await stopWorkers();
    const rows: Row[] = [
      { id: 'sol-0', from: 'BASE', to: 'SOLANA', amount: '2.00', recipient: randomSolanaAddress() },
    ];
    const before = await supplies();
    const batchId = await enqueueVia(rows, 'cctp');
    startWorker();
    const doc = await stack.waitComplete(batchId);
    expect(doc.transfers[0]).toMatchObject({ state: 'failed', error: { code: 'cctp_route_unsupported' } });
    expect(doc.transfers[0]?.cctp).toMatchObject({ finality: 2000, burn_tx: null, mint_tx: null });
    expect(await supplies()).toEqual(before);
  });
});
