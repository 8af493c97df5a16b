import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWalletClient, http, pad, parseAbiItem, toFunctionSelector, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { CCTP_DOMAIN, CCTP_V2_CONTRACTS } from '../../src/domain/cctp.ts';
import type { EvmChain } from '../../src/domain/chains.ts';
import { parseUsdc } from '../../src/domain/money.ts';
import type { BatchStatus } from '../../src/present/batch-status.ts';
import { cctpLeaseChannel, cctpLeaseKey } from '../../src/store/cctp-gate.ts';
import { keys } from '../../src/store/keys.ts';
import { createTransferStore } from '../../src/store/transfer-store.ts';
import { nextNonce, readOwnerTx } from '../../src/store/owner-txs.ts';
import { holdTimesOf } from '../../src/domain/hold-times.ts';
import { TEST_WORKER_LOCK_MS } from '../../support/product-env.ts';
import { startReplicatedRedis } from '../../support/replicated-redis.ts';
import { spawnCli, waitFor, type SpawnedProcess } from '../helpers/cli.ts';
import { fundOwners, startStack, type Stack } from '../helpers/e2e.ts';
import { OTHER_EVM_KEY, TEST_EVM_KEY } from '../helpers/sandbox.ts';
import { failoverStack } from '../helpers/failover.ts';
import { randomEvmAddress, solanaKeypairFile, type Row } from '../helpers/fixtures.ts';
import { startReplyCutter } from '../helpers/reply-cutter.ts';
import { startRpcFaults, type RpcCall, type RpcFaults, type SeenSend } from '../helpers/rpc-faults.ts';
import { ERC20, sandboxUsdc } from '../helpers/sandbox-usdc.ts';

/**
 * The CCTP road's exactly-once rules under the faults of issue 45 item 8 (docs/cctp.md "Exactly
 * once on this road"), each at an exact point: worker processes spawned through the CLI, each
 * reaching the sandbox's anvils through its own routes of a JSON-RPC proxy (test/helpers/rpc-faults.ts)
 * that kills it (SIGKILL) on the transaction it is sending or the receipt it is reading, loses the
 * node's answer to a broadcast, or shows the chain some blocks behind. Judged by the chains: each
 * recipient holds its amount (Standard: no fee), and each chain's USDC totalSupply moved by exactly
 * what was burned from it and minted to it — a second burn or mint of a row would show there.
 * One stack (Redis, sandbox, proxy) for every case; the failover case brings its replicated Redis.
 */

let stack: Stack;
let rpc: RpcFaults;

beforeAll(async () => {
  stack = await startStack({
    sandbox: { cctpStandardDelayMs: 300, cctpFastDelayMs: 0, cctpRateLimitPerSecond: null },
  });
  rpc = await startRpcFaults(stack.sandbox.rpc);
});
afterAll(async () => {
  await stopWorkers();
  await rpc?.close();
  await stack?.stop();
});

const { anvil, usdc, balanceOf, supplies } = sandboxUsdc(() => stack.sandbox.nodes);
/**
 * The owner (its key, outside the worker) lets TokenMessengerV2 spend `usdcAmount` on `chain`: the
 * worker's next transfer from there needs no approve and goes straight to its burn.
 */
async function approveOutside(chain: EvmChain, usdcAmount: bigint, key: Hex = TEST_EVM_KEY): Promise<void> {
  const url = stack.sandbox.nodes.evm[chain].url as string;
  const wallet = createWalletClient({ account: privateKeyToAccount(key), transport: http(url) });
  const hash = await wallet.writeContract({
    chain: null,
    address: usdc(chain),
    abi: ERC20,
    functionName: 'approve',
    args: [CCTP_V2_CONTRACTS.testnet[chain].tokenMessenger as Hex, usdcAmount * 1_000_000n],
  });
  await anvil(chain).waitForTransactionReceipt({ hash });
}

const DEPOSIT_FOR_BURN = parseAbiItem(
  'event DepositForBurn(address indexed burnToken, uint256 amount, address indexed depositor, bytes32 mintRecipient, uint32 destinationDomain, bytes32 destinationTokenMessenger, bytes32 destinationCaller, uint256 maxFee, uint32 indexed minFinalityThreshold, bytes hookData)',
);
const MINT_AND_WITHDRAW = parseAbiItem(
  'event MintAndWithdraw(address indexed mintRecipient, uint256 amount, address indexed mintToken, uint256 feeCollected)',
);

/** The burns on its source chain and the mints on its destination of a row (its recipient is its own). */
async function burnsAndMints(r: Row): Promise<{ burns: number; mints: number }> {
  const from = r.from as EvmChain;
  const to = r.to as EvmChain;
  const burns = await anvil(from).getLogs({
    address: CCTP_V2_CONTRACTS.testnet[from].tokenMessenger as Hex,
    event: DEPOSIT_FOR_BURN,
    fromBlock: 0n,
  });
  const mints = await anvil(to).getLogs({
    address: CCTP_V2_CONTRACTS.testnet[to].tokenMessenger as Hex,
    event: MINT_AND_WITHDRAW,
    args: { mintRecipient: r.recipient as Hex },
    fromBlock: 0n,
  });
  const recipient = pad(r.recipient.toLowerCase() as Hex, { size: 32 });
  return {
    burns: burns.filter((l) => l.args.mintRecipient?.toLowerCase() === recipient).length,
    mints: mints.length,
  };
}

/** One row per route `[from, to]`, each to a new recipient. */
function rowsOf(tag: string, routes: readonly (readonly [EvmChain, EvmChain])[]): Row[] {
  return routes.map(([from, to], i) => ({
    id: `${tag}-${i}`,
    from,
    to,
    amount: `${i + 2}.${String(11 * (i + 1)).padStart(2, '0')}`,
    recipient: randomEvmAddress(),
  }));
}

let running: SpawnedProcess[] = [];

/**
 * A worker through the CLI; `only` makes it serve that source chain alone (its permit spender set for
 * that chain only), so each faulty worker takes the one row a case gives it.
 */
function startWorker(extra: Record<string, string> = {}, only?: EvmChain): SpawnedProcess {
  const env: Record<string, string | undefined> = {
    ...stack.env,
    CCTP_API_URL: stack.sandbox.cctp.api_url,
    ...extra,
  };
  if (only) {
    env[`PERMIT_SPENDER_${only}`] = env['PERMIT_SPENDER'];
    env['PERMIT_SPENDER'] = undefined;
    env['SOLANA_KEYPAIR_FILE'] = undefined;
  }
  const w = spawnCli(['worker'], env);
  running.push(w);
  return w;
}

async function stopWorkers(): Promise<void> {
  await Promise.all(running.map((w) => w.stop(10_000)));
  running = [];
}

function resetRpc(): void {
  rpc.send = undefined;
  rpc.after = undefined;
  rpc.receipt = undefined;
  rpc.read = undefined;
  rpc.lags.clear();
}

async function enqueueCctp(rows: Row[]): Promise<string> {
  const { code, batchId, stderr } = await stack.enqueue(rows, ['--via', 'cctp']);
  expect(code, stderr).toBe(0);
  return batchId;
}

/** Every transfer submitted and minted (`intent_status` complete). */
async function waitMinted(
  read: (id: string) => Promise<BatchStatus>,
  batchId: string,
  timeoutMs = 120_000,
): Promise<BatchStatus> {
  try {
    return await waitFor(
      `batch ${batchId} minted`,
      async () => {
        const doc = await read(batchId);
        // A row ended otherwise (failed, needs_review) never mints: said at once, not at the timeout.
        const ended = doc.transfers.find(
          (t) => t.state !== 'submitted' && t.state !== 'queued' && t.state !== 'in_progress',
        );
        if (ended) throw new Error(`${ended.id} ended ${ended.state}: ${ended.evidence.join('; ')}`);
        return doc.complete && doc.transfers.every((t) => t.intent_status === 'complete') ? doc : undefined;
      },
      { timeoutMs, intervalMs: 250 },
    );
  } catch (err) {
    // Say where each row stands, and what the workers said last.
    const doc = await read(batchId);
    const rows = doc.transfers.map((t) => ({
      id: t.id,
      state: t.state,
      wait: t.wait_reason,
      intent: t.intent_status,
      cctp: t.cctp,
      evidence: t.evidence,
    }));
    const out = running.map((w, i) => `--- worker ${i}\n${w.output().slice(-3000)}`).join('\n');
    throw new Error(`${(err as Error).message}\n${JSON.stringify(rows, null, 1)}\n${out}`);
  }
}

/**
 * Each row burned once on its source and minted once to its recipient (Standard: no fee), by the
 * contracts' events; with `before` (no other case moving USDC meanwhile), each supply moved by the
 * amounts too.
 */
async function expectMintedOnce(doc: BatchStatus, rows: Row[], before?: Record<EvmChain, bigint>) {
  expect(doc.transfers.map((t) => [t.id, t.state])).toEqual(rows.map((r) => [r.id, 'submitted']));
  const expected = before && { ...before };
  for (const r of rows) {
    const amount = parseUsdc(r.amount);
    expect(await burnsAndMints(r), `${r.id} burned once, minted once`).toEqual({ burns: 1, mints: 1 });
    expect(await balanceOf(r.to as EvmChain, r.recipient), `${r.id} minted to its recipient`).toBe(amount);
    if (!expected) continue;
    expected[r.from as EvmChain] -= amount;
    expected[r.to as EvmChain] += amount;
  }
  // A second burn of a row lowers its source's supply again; a second mint raises its destination's.
  if (expected) expect(await supplies()).toEqual(expected);
}

/** The burns a worker sent through the proxy: one nonce per row of that chain, one hash per nonce. */
function burnsSent(tag: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const s of rpc.sends.filter((x) => x.tag === tag && x.kind === 'burn')) {
    const at = `${s.chain}:${s.nonce}`;
    out.set(at, (out.get(at) ?? new Set()).add(s.hash));
  }
  return out;
}

const byId = (doc: BatchStatus, id: string) => doc.transfers.find((t) => t.id === id);

/** The depositors of the burns of a row (its recipient is its own), from its source chain's events. */
async function burnDepositors(r: Row): Promise<string[]> {
  const from = r.from as EvmChain;
  const logs = await anvil(from).getLogs({
    address: CCTP_V2_CONTRACTS.testnet[from].tokenMessenger as Hex,
    event: DEPOSIT_FOR_BURN,
    fromBlock: 0n,
  });
  const recipient = pad(r.recipient.toLowerCase() as Hex, { size: 32 });
  return logs
    .filter((l) => l.args.mintRecipient?.toLowerCase() === recipient)
    .map((l) => String(l.args.depositor).toLowerCase());
}

const ALLOWANCE = toFunctionSelector('allowance(address,address)');

/** Whether a read the proxy sees is an `allowance(owner, spender)` eth_call. */
function isAllowanceRead(call: RpcCall): boolean {
  const data = (call.params?.[0] as { data?: string; input?: string } | undefined) ?? {};
  return call.method === 'eth_call' && (data.data ?? data.input ?? '').slice(0, 10) === ALLOWANCE;
}

/**
 * Two new owners; the run chose the first (and saved it) and reads its allowance: there the record loses
 * the owner, as a failover to a replica that missed that write does (the run goes on, holding the
 * owner in memory; its next writes land on the promoted replica). Its `point` call (the approve:
 * the first owner has no allowance; or the burn: it covers the row) reaches the node and the worker
 * is killed before it hears so. The next worker lists the owners the other way round: a re-run with
 * no owner to follow would take the second (as it would take whichever owner's lease is free:
 * another transfer may hold the first's), whose allowance covers the row — and burn it again.
 * Judged by the chain: one burn, by the first owner, one mint; the second owner sent nothing.
 */
async function ownerLostUntil(point: 'approve' | 'burn'): Promise<void> {
  resetRpc();
  const tag = `owner-${point}`;
  // Two owners of their own: no other case's lease or allowance on them.
  const firstKey = generatePrivateKey();
  const secondKey = generatePrivateKey();
  const first = privateKeyToAccount(firstKey).address.toLowerCase();
  const second = privateKeyToAccount(secondKey).address;
  await fundOwners(stack.sandbox, [first, second]);
  await approveOutside('ETH', 100n, secondKey);
  if (point === 'burn') await approveOutside('ETH', 100n, firstKey);
  const secondNonce = await anvil('ETH').getTransactionCount({ address: second });
  const rows = rowsOf(tag, [['ETH', 'BASE']]);
  const before = await supplies();
  const batchId = await enqueueCctp(rows);
  const record = keys(stack.env['QUEUE_PREFIX'] as string).transfer(batchId, `${tag}-0`);
  let lost = 0;
  rpc.read = async (at, _chain, call) => {
    if (at === tag && isAllowanceRead(call) && lost === 0) lost = await stack.client.hdel(record, 'owner');
  };
  const worker = startWorker({ ...rpc.env(tag), EVM_PRIVATE_KEY: `${firstKey},${secondKey}` }, 'ETH');
  const killed: SeenSend[] = [];
  rpc.after = async (s) => {
    if (s.tag !== tag || s.kind !== point) return;
    await worker.kill9();
    killed.push(s);
  };
  await waitFor(`the worker killed at its ${point}`, async () => killed.length >= 1, {
    timeoutMs: 60_000,
    intervalMs: 50,
  });
  expect(lost).toBe(1);
  startWorker({ EVM_PRIVATE_KEY: `${secondKey},${firstKey}` });
  const doc = await waitMinted((id) => stack.status(id), batchId, 180_000);
  await stopWorkers();
  await expectMintedOnce(doc, rows, before);
  expect(await burnDepositors(rows[0] as Row)).toEqual([first]);
  if (point === 'burn') expect(byId(doc, `${tag}-0`)?.tx_hash).toBe(killed[0]?.hash);
  expect(await anvil('ETH').getTransactionCount({ address: second })).toBe(secondNonce);
  expect((await stack.client.hget(record, 'owner'))?.toLowerCase()).toBe(first);
}

/** The holder another transfer's run writes in an owner's lease (its `batch/transfer`). */
const OTHER_HOLDER = 'another-batch/another-transfer';

/**
 * Another transfer takes the owner's lease from a running transfer (the run's lapsed in a long stall,
 * or a failover lost it): written over it at the run's allowance read, before its burn is signed.
 * The run must sign nothing with that owner while the other holds it (the other's approve may set
 * the allowance this burn counts on): it hands its job back, the reason shown. Meanwhile the other
 * transfer spends the allowance (its approve sets it to 0, as its own burn would use it) and gives
 * the lease back: the run comes back, finds its burn (never signed) no longer covered, approves
 * again and burns — rather than sending a burn that reverts (`failed`, a payout failed for nothing).
 * Once that burn is sent the lease is taken again: a call signed and sent is driven to its fate
 * all the same (submitted, that very transaction), and the other's lease is left as it is.
 */
async function leaseTakenMidRun(): Promise<void> {
  resetRpc();
  const tag = 'lease-taken';
  const key = generatePrivateKey();
  const owner = privateKeyToAccount(key).address;
  await fundOwners(stack.sandbox, [owner]);
  await approveOutside('ETH', 100n, key);
  const rows = rowsOf(tag, [['ETH', 'BASE']]);
  const before = await supplies();
  const batchId = await enqueueCctp(rows);
  const prefix = stack.env['QUEUE_PREFIX'] as string;
  const lease = cctpLeaseKey(prefix, 'ETH', owner);
  let taken = false;
  rpc.read = async (at, _chain, call) => {
    if (at !== tag || taken || !isAllowanceRead(call)) return;
    taken = true;
    await stack.client.set(lease, OTHER_HOLDER, 'PX', 600_000);
  };
  startWorker({ ...rpc.env(tag), EVM_PRIVATE_KEY: key }, 'ETH');
  const ours = () => rpc.sends.filter((s) => s.tag === tag);
  const row = await waitFor(
    'the run handing its job back, or sending with the lease held by another',
    async () => {
      const t = byId(await stack.status(batchId), `${tag}-0`);
      return ours().length > 0 || /took the lease/.test(t?.wait_reason ?? '') ? t : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 100 },
  );
  expect(ours().map((s) => `${s.kind} while ${OTHER_HOLDER} held the lease`)).toEqual([]);
  expect([row?.state, row?.wait_reason]).toEqual(['in_progress', expect.stringContaining(owner)]);
  // The other transfer spends the allowance, then gives the lease back (its release publishes it).
  await approveOutside('ETH', 0n, key);
  const retaken: SeenSend[] = [];
  rpc.after = async (s) => {
    if (s.tag !== tag || s.kind !== 'burn' || retaken.length > 0) return;
    await stack.client.set(lease, OTHER_HOLDER, 'PX', 600_000);
    retaken.push(s);
  };
  await stack.client.del(lease);
  await stack.client.publish(cctpLeaseChannel(prefix), lease);
  const doc = await waitMinted((id) => stack.status(id), batchId, 180_000);
  await stopWorkers();
  await expectMintedOnce(doc, rows, before);
  expect(await burnDepositors(rows[0] as Row)).toEqual([owner.toLowerCase()]);
  expect(ours().map((s) => s.kind)).toEqual(expect.arrayContaining(['approve', 'burn']));
  expect(byId(doc, `${tag}-0`)?.tx_hash).toBe(retaken[0]?.hash);
  expect(byId(doc, `${tag}-0`)?.evidence.join('\n')).toMatch(/never signed .* beginning the burn anew/);
  expect(await stack.client.get(lease)).toBe(OTHER_HOLDER);
  await stack.client.del(lease);
}

/**
 * A re-run on a worker that holds no key of the owner the record names (workers of one deployment
 * holding different keys): the first worker, holding the first owner's key, sends the burn and is
 * killed before it hears so; the second holds only the second owner's key and finds the row. It
 * must not judge the burn's fate unknowable (`needs_review`) nor burn with its own owner: it hands
 * the job back, the reason shown, and a worker holding the first owner's key finishes it — the
 * burn the first sent, minted once. Meanwhile another transfer holds the first owner's lease (the
 * dead run's lapsed): a burn sent is its transfer's to drive all the same, not a wait for the lease
 * (the other's transactions may sit behind its nonce).
 */
async function ownerKeyElsewhere(): Promise<void> {
  resetRpc();
  const tag = 'nokey';
  const firstKey = generatePrivateKey();
  const secondKey = generatePrivateKey();
  const first = privateKeyToAccount(firstKey).address;
  const second = privateKeyToAccount(secondKey).address;
  await fundOwners(stack.sandbox, [first, second]);
  await approveOutside('ETH', 100n, firstKey);
  await approveOutside('ETH', 100n, secondKey);
  const secondNonce = await anvil('ETH').getTransactionCount({ address: second });
  const rows = rowsOf(tag, [['ETH', 'BASE']]);
  const before = await supplies();
  const batchId = await enqueueCctp(rows);
  const worker = startWorker({ ...rpc.env(tag), EVM_PRIVATE_KEY: firstKey }, 'ETH');
  const killed: SeenSend[] = [];
  rpc.after = async (s) => {
    if (s.tag !== tag || s.kind !== 'burn') return;
    await worker.kill9();
    killed.push(s);
  };
  await waitFor('the worker killed at its burn', async () => killed.length >= 1, {
    timeoutMs: 60_000,
    intervalMs: 50,
  });
  const lease = cctpLeaseKey(stack.env['QUEUE_PREFIX'] as string, 'ETH', first);
  await stack.client.set(lease, OTHER_HOLDER, 'PX', 600_000);
  startWorker({ EVM_PRIVATE_KEY: secondKey });
  const row = await waitFor(
    'the row taken by the worker without its key',
    async () => {
      const t = byId(await stack.status(batchId), `${tag}-0`);
      return t && (t.state !== 'in_progress' || /holds no key/.test(t.wait_reason ?? '')) ? t : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 250 },
  );
  expect([row.state, row.wait_reason], row.evidence.join('; ')).toEqual([
    'in_progress',
    expect.stringContaining(first),
  ]);
  startWorker({ EVM_PRIVATE_KEY: firstKey });
  const doc = await waitMinted((id) => stack.status(id), batchId, 180_000);
  await stopWorkers();
  await expectMintedOnce(doc, rows, before);
  expect(await burnDepositors(rows[0] as Row)).toEqual([first.toLowerCase()]);
  expect(byId(doc, `${tag}-0`)?.tx_hash).toBe(killed[0]?.hash);
  expect(await anvil('ETH').getTransactionCount({ address: second })).toBe(secondNonce);
  expect(await stack.client.get(lease)).toBe(OTHER_HOLDER);
  await stack.client.del(lease);
}

/**
 * One owner's lease lapses while its burn is signed and sent but not mined (a run stalled past the
 * lease, a node slow to take the burn), and the owner's next transfer takes the lease: the
 * allowance it reads is not spent by that burn yet. Here every broadcast of the first transfer's
 * burn is withheld from the node until the test lets them through (to the run, a broadcast whose
 * answer is lost: it sends the same bytes again), and the second transfer's holder is written in
 * the lease, as its take after a lapse does. The owner's allowance covers each row but not both: a
 * second transfer that believed it would burn without an approve, and its burn would revert once
 * the first is mined (`failed`, for nothing of its own). It must sign nothing while the owner's
 * earlier burn is not mined (the reason shown), then approve what the first left short, and burn.
 */
async function leaseLapsedBurnUnmined(): Promise<void> {
  resetRpc();
  const tag = 'lapse';
  const key = generatePrivateKey();
  const owner = privateKeyToAccount(key).address;
  await fundOwners(stack.sandbox, [owner]);
  // 3 USDC: one row of 2.11, not two.
  await approveOutside('ETH', 3n, key);
  const first = rowsOf('lapse-a', [['ETH', 'BASE']]);
  const second = rowsOf('lapse-b', [['ETH', 'BASE']]);
  const before = await supplies();
  let held: number | undefined;
  let released = false;
  rpc.send = (s) => {
    if (s.tag !== tag || s.chain !== 'ETH' || released) return 'forward';
    if (held === undefined && s.kind === 'burn') held = s.nonce;
    return s.nonce === held ? 'withhold' : 'forward';
  };
  const firstBatch = await enqueueCctp(first);
  startWorker({ ...rpc.env(tag), EVM_PRIVATE_KEY: key }, 'ETH');
  await waitFor('the first burn signed and sent', async () => held !== undefined, {
    timeoutMs: 60_000,
    intervalMs: 50,
  });
  const secondBatch = await enqueueCctp(second);
  const prefix = stack.env['QUEUE_PREFIX'] as string;
  const lease = cctpLeaseKey(prefix, 'ETH', owner);
  await stack.client.set(lease, `${secondBatch}/lapse-b-0`, 'PX', 600_000);
  await stack.client.publish(cctpLeaseChannel(prefix), lease);
  const ofSecond = () => rpc.sends.filter((s) => s.tag === tag && s.chain === 'ETH' && s.nonce !== held);
  const row = await waitFor(
    'the second transfer waiting for the first burn, or sending',
    async () => {
      const t = byId(await stack.status(secondBatch), 'lapse-b-0');
      return ofSecond().length > 0 || /not mined/.test(t?.wait_reason ?? '') ? t : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 100 },
  );
  const sentEarly = ofSecond().map(
    (s) => `${s.kind} at nonce ${s.nonce} before the burn at ${held} was mined`,
  );
  released = true;
  const [a, b] = await Promise.all([
    waitMinted((id) => stack.status(id), firstBatch, 180_000),
    waitMinted((id) => stack.status(id), secondBatch, 180_000),
  ]);
  await stopWorkers();
  expect(sentEarly).toEqual([]);
  expect([row.state, row.wait_reason]).toEqual(['in_progress', expect.stringContaining(owner)]);
  await expectMintedOnce(a, first);
  await expectMintedOnce(b, second);
  const moved = parseUsdc((first[0] as Row).amount) + parseUsdc((second[0] as Row).amount);
  expect(await supplies()).toEqual({ ...before, ETH: before.ETH - moved, BASE: before.BASE + moved });
  expect([...new Set(ofSecond().map((s) => s.kind))]).toEqual(['approve', 'burn']);
  expect(await stack.client.get(lease)).toBeNull();
}

/** `receiveMessage`, as anyone may call it (destinationCaller zero): a relayer minting the message. */
const RECEIVE_MESSAGE = parseAbiItem(
  'function receiveMessage(bytes message, bytes attestation) returns (bool)',
);

/** The message the sandbox's attestation API gives for a burn from `from`, once attested. */
async function attestedMessageOf(
  from: EvmChain,
  burnTx: string,
): Promise<{ message: Hex; attestation: Hex }> {
  const url = `${stack.sandbox.cctp.api_url}/v2/messages/${CCTP_DOMAIN[from]}?transactionHash=${burnTx}`;
  return await waitFor(`the attestation of ${burnTx}`, async () => {
    const res = await fetch(url);
    if (res.status !== 200) return undefined;
    const m = ((await res.json()) as { messages: { status: string; message: Hex; attestation: Hex }[] })
      .messages[0];
    return m?.status === 'complete' ? m : undefined;
  });
}

/**
 * A worker killed right after the write that makes its transfer `submitted` reached Redis, before
 * the one that follows its intent (outcomes.ts submitted: two writes): through a proxy in front of
 * Redis that loses the transition's reply (reply-cutter.ts), the worker killed then. Its job runs
 * again once its lock lapses and finds the transfer submitted: the intent, followed by nobody, is
 * followed then (run-transfer.ts followedAgain) and the burn minted. Left so, it would never be.
 */
async function killedBetweenSubmittedAndFollowed(): Promise<void> {
  resetRpc();
  const tag = 'unfollowed';
  const key = generatePrivateKey();
  await fundOwners(stack.sandbox, [privateKeyToAccount(key).address]);
  await approveOutside('ETH', 100n, key);
  const rows = rowsOf(tag, [['ETH', 'BASE']]);
  const row = rows[0] as Row;
  const before = await supplies();
  const batchId = await enqueueCctp(rows);
  // The transition's script loaded in Redis first (a move of no transfer: nothing written), so the
  // write the proxy cuts is the one Redis applies, not an EVALSHA answered NOSCRIPT.
  const prefix = stack.env['QUEUE_PREFIX'] as string;
  await createTransferStore({ redis: stack.client, prefix }).transition(batchId, 'no-such-transfer', {
    expected: ['in_progress'],
    to: 'submitted',
    fields: {},
  });
  const cutter = await startReplyCutter(stack.redis.port);
  try {
    // The transition to submitted: the only write naming the intent (`cctp:<domain>:<burn tx>`) and
    // its field (the follow set's member names the intent, not the field).
    const cut = cutter.cutReplyTo(`cctp:${CCTP_DOMAIN.ETH}:0x`, 'intent_id', row.id as string);
    const worker = startWorker(
      { EVM_PRIVATE_KEY: key, REDIS_URL: cutter.url, WORKER_LOCK_MS: '6000' },
      'ETH',
    );
    await cut;
    await worker.kill9();
  } finally {
    await cutter.close();
  }
  const t = byId(await stack.status(batchId), row.id as string);
  expect([t?.state, t?.intent_status]).toEqual(['submitted', 'pending']);
  const followed = await stack.client.zrange(keys(prefix).follow, 0, -1);
  expect(followed.filter((m) => m.includes(`/${row.id}/`))).toEqual([]);
  startWorker({ EVM_PRIVATE_KEY: key });
  const doc = await waitMinted((id) => stack.status(id), batchId);
  await stopWorkers();
  await expectMintedOnce(doc, rows, before);
}

/** Mines `n` empty blocks on the sandbox's anvil of `chain`. */
async function mineBlocks(chain: EvmChain, n: number): Promise<void> {
  for (let i = 0; i < n; i++)
    await anvil(chain).request({ method: 'evm_mine' as never, params: [] as never });
}

/** The message minted by a relayer (`receiveMessage` is anyone's to call: destinationCaller is zero). */
async function relayed(burnTx: string): Promise<void> {
  const { message, attestation } = await attestedMessageOf('ETH', burnTx);
  const key = generatePrivateKey();
  await fundOwners(stack.sandbox, [privateKeyToAccount(key).address]);
  const relayer = createWalletClient({
    account: privateKeyToAccount(key),
    transport: http(stack.sandbox.nodes.evm.BASE.url as string),
  });
  const hash = await relayer.writeContract({
    chain: null,
    address: CCTP_V2_CONTRACTS.testnet.BASE.messageTransmitter as Hex,
    abi: [RECEIVE_MESSAGE],
    functionName: 'receiveMessage',
    args: [message, attestation],
  });
  expect((await anvil('BASE').waitForTransactionReceipt({ hash })).status).toBe('success');
}

/**
 * A worker killed after its mint call was given a nonce and before anything of it was signed (at its
 * first read of the destination after the nonce was given); then the message is either minted by a
 * relayer, or its attestation expires and is attested again (other bytes: the call given the nonce
 * can never mint it). The next worker settles that call before it goes on: given up, its nonce
 * filled by a zero-value transaction from the owner to itself (docs/cctp.md "The flow", step 6) —
 * then `complete` (minted by the relayer), or the next generation's mint call, at the next nonce.
 * Left unsigned, that nonce would hold every later transaction of the owner on that chain for good.
 */
async function mintNonceGivenNeverSigned(then: 'relayed' | 'reattested'): Promise<void> {
  resetRpc();
  const tag = `mint-gap-${then}`;
  const key = generatePrivateKey();
  const owner = privateKeyToAccount(key).address;
  await fundOwners(stack.sandbox, [owner]);
  await approveOutside('ETH', 100n, key);
  // Re-attested: the first attestation expires 5 blocks on; the second never.
  if (then === 'reattested') await stack.sandbox.admin.configure({ cctpExpiryBlocks: 5 });
  const rows = rowsOf(tag, [['ETH', 'BASE']]);
  const row = rows[0] as Row;
  const batchId = await enqueueCctp(rows);
  const onBase = { prefix: stack.env['QUEUE_PREFIX'] as string, chain: 'BASE', owner };
  // A short lock: the dead worker's claim on the intent lapses in 2 × 6 s (hold-times.ts).
  const worker = startWorker({ ...rpc.env(tag), EVM_PRIVATE_KEY: key, WORKER_LOCK_MS: '6000' }, 'ETH');
  let given: bigint | undefined;
  rpc.read = async (at, chain) => {
    if (at !== tag || chain !== 'BASE' || given !== undefined) return;
    const next = await nextNonce(stack.client, onBase);
    if (next === undefined) return;
    given = next - 1n;
    await worker.kill9();
  };
  await waitFor('the worker killed once its mint call has a nonce', async () => given !== undefined, {
    timeoutMs: 60_000,
    intervalMs: 50,
  });
  const at = given as bigint;
  const left = await readOwnerTx(stack.client, onBase, at);
  expect(left?.callId).toMatch(/^cctp-mint:.*:1$/);
  expect(left?.versions).toEqual([]);
  const t = byId(await stack.status(batchId), row.id as string);
  expect(t?.state).toBe('submitted');
  if (then === 'relayed') await relayed(t?.tx_hash as string);
  else {
    await stack.sandbox.admin.configure({ cctpExpiryBlocks: 0 });
    await mineBlocks('BASE', 6);
  }
  expect(await anvil('BASE').getTransactionCount({ address: owner })).toBe(Number(at));
  startWorker({ EVM_PRIVATE_KEY: key });
  const doc = await waitMinted((id) => stack.status(id), batchId);
  await stopWorkers();
  expect(await burnsAndMints(row)).toEqual({ burns: 1, mints: 1 });
  expect(await balanceOf('BASE', row.recipient)).toBe(parseUsdc(row.amount));
  // The call's nonce is filled, by a zero-value transaction from the owner to itself, mined.
  const filled = await readOwnerTx(stack.client, onBase, at);
  expect(filled?.filled).toBe(true);
  const filler = await anvil('BASE').getTransaction({ hash: filled?.done?.hash as Hex });
  expect([filler.to?.toLowerCase(), filler.value, filler.input]).toEqual([owner.toLowerCase(), 0n, '0x']);
  const mintTx = byId(doc, row.id as string)?.cctp?.mint_tx ?? null;
  if (then === 'relayed') {
    // Minted by the relayer: the status names no mint of ours, and the owner sent nothing more.
    expect(mintTx).toBeNull();
    expect(await anvil('BASE').getTransactionCount({ address: owner })).toBe(Number(at) + 1);
  } else {
    // Minted by the next generation's call, at the next nonce.
    const next = await readOwnerTx(stack.client, onBase, at + 1n);
    expect(next?.callId).toMatch(/^cctp-mint:.*:2$/);
    expect(mintTx).toBe(next?.done?.hash);
  }
}

/**
 * How long the failover case's rows may take to be minted after the failover: the product's own
 * timers, each a wait a failover brings (docs/replicated-redis.md "What a failover still costs"),
 * at the holds the tests' workers run with (WORKER_LOCK_MS, support/product-env.ts), plus the
 * chain's work; not a guess at the machine's speed. In the worst order they stack:
 * - a job whose move off `active` the failover lost (handed back to wait for the replicas) comes back
 *   once its lock lapses and a stalled check sees it (jobLockMs + stalledIntervalMs); a row behind
 *   an owner's lease whose release the failover lost waits for it to lapse (cctpLeaseMs, or less:
 *   the holder's next run releases it);
 * - a transfer whose job's end reached the promoted replica but whose `submitted` did not has a
 *   finished job: the sweeper re-queues it once its batch has been quiet sweepQuietMs, at its next
 *   sweep (sweepEveryMs);
 * - the chain's work after them: the burns, attestations and mints of the rows, one owner's rows one
 *   after another (a block a second), the follower's looks at most 10 s apart (CCTP_FOLLOW):
 *   CHAIN_WORK_MS, room for a loaded machine.
 * Measured on a 2-core machine at load 8, with the 30 s default lock: the stalled jobs came back
 * 26 s after the failover; a transfer whose job's end reached the promoted replica was re-queued by
 * the sweeper at 117 s and minted at 121 s — against the 150 s this case allowed before, with the
 * chain's work on a loaded machine still to add.
 */
const CHAIN_WORK_MS = 60_000;
const HOLDS = holdTimesOf(Number(TEST_WORKER_LOCK_MS));
const AFTER_FAILOVER_MS =
  Math.max(HOLDS.jobLockMs + HOLDS.stalledIntervalMs, HOLDS.cctpLeaseMs) +
  HOLDS.sweepQuietMs +
  HOLDS.sweepEveryMs +
  CHAIN_WORK_MS;

describe('the CCTP road under faults at exact points', () => {
  it('a broadcast whose answer is lost (approve, burn, mint): the same transaction is found, never a second burn', async () => {
    resetRpc();
    const rows = rowsOf('lost', [
      ['ETH', 'ARB'],
      ['BASE', 'POLYGON'],
    ]);
    const before = await supplies();
    const batchId = await enqueueCctp(rows);
    // The first broadcast of every transaction reaches the node; its answer is cut.
    const seen = new Set<string>();
    rpc.send = (s) => {
      if (seen.has(s.hash)) return 'forward';
      seen.add(s.hash);
      return 'lose-answer';
    };
    startWorker(rpc.env('lost'));
    const doc = await waitMinted((id) => stack.status(id), batchId);
    await stopWorkers();
    await expectMintedOnce(doc, rows, before);
    // Each row: one burn, at one nonce, one hash — the one the node took, sent again as it was.
    const burns = burnsSent('lost');
    expect(burns.size).toBe(rows.length);
    for (const [, hashes] of burns) expect(hashes.size).toBe(1);
    for (const r of rows) {
      const t = byId(doc, r.id as string);
      const ours = rpc.sends.filter((s) => s.tag === 'lost' && s.kind === 'burn' && s.chain === r.from);
      expect(ours.map((s) => s.hash)).toContain(t?.tx_hash);
      expect(ours[0]?.verdict).toBe('lose-answer');
      // The mint: its answer lost too, and the one minted is that transaction.
      const mints = rpc.sends.filter((s) => s.tag === 'lost' && s.kind === 'mint' && s.chain === r.to);
      expect(mints[0]?.verdict).toBe('lose-answer');
      expect(new Set(mints.map((m) => m.hash))).toEqual(new Set([t?.cctp?.mint_tx]));
    }
  }, 180_000);

  it('an RPC some blocks behind (every read, or only its receipts): no burn is judged lost and made again', async () => {
    resetRpc();
    // ETH and ARB answer every read as of 4 blocks ago (one node behind); BASE and POLYGON their
    // receipts only (nodes behind a balancer: the nonce from one ahead, the receipt from one behind).
    rpc.lags.set('lagall', { blocks: 4, what: 'all' });
    rpc.lags.set('lagrcpt', { blocks: 4, what: 'receipts' });
    const env = {
      EVM_RPC_URL_ETH: rpc.url('lagall', 'ETH'),
      EVM_RPC_URL_ARB: rpc.url('lagall', 'ARB'),
      EVM_RPC_URL_BASE: rpc.url('lagrcpt', 'BASE'),
      EVM_RPC_URL_POLYGON: rpc.url('lagrcpt', 'POLYGON'),
    };
    const rows = rowsOf('lag', [
      ['ETH', 'BASE'],
      ['BASE', 'ETH'],
      ['POLYGON', 'ARB'],
    ]);
    // BASE's row burns at once (no approve): a burn whose receipt lags its nonce.
    await approveOutside('BASE', 100n);
    const before = await supplies();
    const batchId = await enqueueCctp(rows);
    startWorker(env);
    const doc = await waitMinted((id) => stack.status(id), batchId);
    await stopWorkers();
    await expectMintedOnce(doc, rows, before);
    const burns = [...burnsSent('lagall').entries(), ...burnsSent('lagrcpt').entries()];
    expect(burns.map(([at]) => at.split(':')[0]).sort()).toEqual(['BASE', 'ETH', 'POLYGON']);
  }, 180_000);

  it("a burn's earlier writes lost (its owner, generation, maxFee), as a replica promoted without them loses them: the write that says submitted names them, and the row is minted once", async () => {
    resetRpc();
    const rows = rowsOf('lostw', [['ETH', 'ARB']]);
    const before = await supplies();
    const batchId = await enqueueCctp(rows);
    const record = keys(stack.env['QUEUE_PREFIX'] as string).transfer(batchId, 'lostw-0');
    // The burn is mined and its receipt about to be read: the record loses what the run wrote when
    // it chose the owner and began the burn, as a failover to a replica that missed those writes
    // does (the run goes on, holding its lock; its next writes land on the promoted replica).
    let lost = 0;
    rpc.receipt = async (tag, _chain, hash) => {
      const burn = rpc.sends.some((s) => s.hash === hash && s.kind === 'burn');
      if (tag === 'lostw' && burn && lost === 0)
        lost = await stack.client.hdel(record, 'owner', 'cctp_burn_gen', 'cctp_max_fee');
      return true;
    };
    startWorker(rpc.env('lostw'));
    const doc = await waitMinted((id) => stack.status(id), batchId);
    await stopWorkers();
    expect(lost).toBe(3);
    await expectMintedOnce(doc, rows, before);
    const owner = privateKeyToAccount(TEST_EVM_KEY).address;
    expect((await stack.client.hget(record, 'owner'))?.toLowerCase()).toBe(owner.toLowerCase());
  }, 180_000);

  it('several owners: the write that chose the owner lost (a failover), the burn signed with it and sent, the worker killed: the re-run follows that burn, never burns again with another owner', async () => {
    await ownerLostUntil('burn');
  }, 300_000);

  it('several owners: the write that chose the owner lost (a failover), the approve signed with it and sent, the worker killed: the re-run follows that approve and burns with that owner', async () => {
    await ownerLostUntil('approve');
  }, 300_000);

  it("another transfer takes the owner's lease from a running burn: nothing is signed while it holds it, the allowance it spent is approved again, a burn already sent is driven to its fate", async () => {
    // A failure here leaves no worker of this case to take the next case's rows.
    await leaseTakenMidRun().finally(stopWorkers);
  }, 300_000);

  it('a re-run on a worker holding no key of the owner the record names: it waits for a worker that does (no_key), never needs_review', async () => {
    // A failure here leaves no worker of this case to take the next case's rows.
    await ownerKeyElsewhere().finally(stopWorkers);
  }, 300_000);

  it('a worker killed between the write that makes a transfer submitted and the one that follows its intent: its job, run again, follows it and the burn is minted', async () => {
    await killedBetweenSubmittedAndFollowed().finally(stopWorkers);
  }, 180_000);

  it.each(['relayed', 'reattested'] as const)(
    'a mint call given a nonce, never signed (its worker killed), then its message %s: that nonce is filled by a zero-value transaction, never left to hold the owner',
    async (then) => {
      await mintNonceGivenNeverSigned(then).finally(async () => {
        await stopWorkers();
        await stack.sandbox.admin.configure({ cctpExpiryBlocks: 0 });
      });
    },
    180_000,
  );

  it("an owner's lease lapses while its burn is sent, not mined: the next transfer signs nothing until it is mined, then approves what it left short and burns (no burn reverted for want of allowance)", async () => {
    // A failure here leaves no worker of this case to take the next case's rows.
    await leaseLapsedBurnUnmined().finally(stopWorkers);
  }, 300_000);

  // This case and the next run side by side (the next has its own Redis and owner): the dead
  // workers' locks lapse while the failover plays out. Neither judges by the supplies then.
  it.concurrent(
    'workers killed -9 at exact points (burn saved not sent; burn sent, answer not received; burn mined, receipt not read; mint sent): every row burned and minted once',
    async () => {
      resetRpc();
      const rows = rowsOf('kill', [
        ['ETH', 'BASE'],
        ['BASE', 'ARB'],
        ['ARB', 'POLYGON'],
        ['POLYGON', 'ETH'],
      ]);
      const batchId = await enqueueCctp(rows);
      const workers = new Map<string, SpawnedProcess>();
      const killed: SeenSend[] = [];
      const kill = async (tag: string) => await workers.get(tag)?.kill9();
      rpc.send = async (s) => {
        if (s.tag === 'k-before' && s.kind === 'burn') {
          await kill(s.tag);
          killed.push(s);
          return 'withhold';
        }
        return s.tag === 'k-after' && s.kind === 'burn' ? 'lose-answer' : 'forward';
      };
      rpc.after = async (s) => {
        if ((s.tag === 'k-after' && s.kind === 'burn') || (s.tag === 'k-mint' && s.kind === 'mint')) {
          await kill(s.tag);
          killed.push(s);
        }
      };
      rpc.receipt = async (tag, _chain, hash) => {
        const burn = rpc.sends.find((s) => s.hash === hash && s.kind === 'burn');
        if (tag !== 'k-receipt' || !burn) return true;
        await kill(tag);
        killed.push(burn);
        return false;
      };
      // One worker per source chain: each takes its row and dies at its point.
      workers.set('k-before', startWorker(rpc.env('k-before'), 'ETH'));
      workers.set('k-after', startWorker(rpc.env('k-after'), 'BASE'));
      workers.set('k-receipt', startWorker(rpc.env('k-receipt'), 'ARB'));
      await waitFor('three workers killed at their burns', async () => killed.length >= 3, {
        timeoutMs: 60_000,
        intervalMs: 50,
      });
      // No burn of theirs is submitted: the first was never sent, the others' answers never read.
      expect((await stack.status(batchId)).transfers.filter((t) => t.state === 'submitted')).toEqual([]);
      // The fourth burns its row, and dies sending the mint (no other worker alive mints it).
      workers.set('k-mint', startWorker(rpc.env('k-mint'), 'POLYGON'));
      await waitFor('the mint sender killed', async () => killed.length >= 4, {
        timeoutMs: 60_000,
        intervalMs: 50,
      });
      expect(killed.map((s) => `${s.tag}:${s.kind}`)).toEqual([
        expect.stringMatching(/^k-(before|after|receipt):burn$/),
        expect.stringMatching(/^k-(before|after|receipt):burn$/),
        expect.stringMatching(/^k-(before|after|receipt):burn$/),
        'k-mint:mint',
      ]);
      // One worker finishes every row, once the dead workers' locks and claims lapse.
      startWorker();
      const doc = await waitMinted((id) => stack.status(id), batchId, 180_000);
      await stopWorkers();
      await expectMintedOnce(doc, rows);
      // Each row's burn is the one transaction signed for it at the point of death, sent (again) as it was.
      const hashOf = (tag: string) => killed.find((s) => s.tag === tag)?.hash;
      expect(byId(doc, 'kill-0')?.tx_hash).toBe(hashOf('k-before'));
      expect(byId(doc, 'kill-1')?.tx_hash).toBe(hashOf('k-after'));
      expect(byId(doc, 'kill-2')?.tx_hash).toBe(hashOf('k-receipt'));
      expect(byId(doc, 'kill-3')?.cctp?.mint_tx).toBe(hashOf('k-mint'));
    },
    300_000,
  );

  it.concurrent(
    'a Redis failover mid-batch to a replica that missed the last writes: every row burned and minted once',
    async () => {
      // Its own owner: its nonces are not the other case's (one key, two Redis, would be two senders).
      const owner = privateKeyToAccount(OTHER_EVM_KEY).address;
      await fundOwners(stack.sandbox, [owner]);
      const rs = await startReplicatedRedis();
      const client = new Redis(rs.url, { maxRetriesPerRequest: null });
      client.on('error', () => {});
      const dir = mkdtempSync(join(tmpdir(), 'usdc-cctp-failover-'));
      const s = failoverStack({
        name: 'cctp',
        sandbox: stack.sandbox,
        dir,
        solanaKeyFile: solanaKeypairFile(dir).file,
        client,
        redisEnv: { REDIS_URL: rs.url },
        extra: { CCTP_API_URL: stack.sandbox.cctp.api_url, EVM_PRIVATE_KEY: OTHER_EVM_KEY },
      });
      let worker: SpawnedProcess | undefined;
      try {
        // Two rows from each of two chains: the second of each burns after the first (one owner's
        // lease per chain), so it signs after the cut.
        const rows = rowsOf('fo', [
          ['ETH', 'BASE'],
          ['BASE', 'ETH'],
          ['ETH', 'ARB'],
          ['BASE', 'POLYGON'],
        ]);
        const { batchId, stderr } = await s.enqueue(rows, 'fo', { TRANSFER_VIA: 'cctp' });
        if (!batchId) throw new Error(`enqueue failed: ${stderr}`);
        worker = spawnCli(['worker'], s.env);
        const k = keys(s.prefix);
        await waitFor(
          'a burn saved',
          async () => {
            for (const r of rows)
              if (await client.hexists(k.transfer(batchId, r.id as string), 'cctp_burn_tx')) return true;
            return undefined;
          },
          { timeoutMs: 60_000, intervalMs: 20 },
        );
        // From here nothing the primary writes reaches the replica; what needs the replicas waits.
        rs.link.cut();
        await waitFor('a transfer waiting for the replica', () => s.waitingForReplicas(batchId), {
          timeoutMs: 60_000,
          intervalMs: 100,
        });
        expect(await rs.lag()).toBeGreaterThan(0);
        await rs.failover();
        const doc = await waitMinted((id) => s.status(id), batchId, AFTER_FAILOVER_MS);
        await expectMintedOnce(doc, rows);
        expect(worker.child.exitCode).toBeNull();
      } catch (err) {
        // Its worker is not one of `running`: what it said last goes with the failure (any wait).
        (err as Error).message += `\n--- its worker\n${worker?.output().slice(-4000) ?? ''}`;
        throw err;
      } finally {
        await worker?.stop(10_000);
        client.disconnect();
        await rs.stop();
        rmSync(dir, { recursive: true, force: true });
      }
    },
    AFTER_FAILOVER_MS + 120_000,
  );
});
