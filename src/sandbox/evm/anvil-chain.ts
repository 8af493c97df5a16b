import {
  decodeErrorResult,
  decodeFunctionResult,
  encodeAbiParameters,
  encodeDeployData,
  encodeFunctionData,
  keccak256,
  parseEther,
  parseSignature,
  type Abi,
  type Hex,
} from 'viem';
import { USDC_EVM } from '../../domain/chains.ts';
import type { EvmTransferOutcome, Refusal, SandboxEvmChain } from '../chain-types.ts';
import type { ParsedPermit } from '../permit-check.ts';
import { fundingAmount } from '../sandbox-config.ts';
import { installCctp, readSentMessages, sandboxCctpAddresses } from './anvil-cctp.ts';
import { anvilCall, anvilCalls, type AnvilRpcError } from './anvil-rpc.ts';
import { startAnvil } from './anvil-process.ts';
import type { AnvilChainDeps, AnvilChainState } from './anvil-chain-state.ts';
import { createBlockClock } from './block-clock.ts';
import { handleLaggingRpc } from './lagging-rpc.ts';
import { diagnosePermitRevert } from './permit-refusal.ts';
import artifactJson from './SandboxUsdc.json' with { type: 'json' };

const ABI = artifactJson.abi as Abi;
const SLOTS = artifactJson.storageSlots as Readonly<Record<string, number>>;
// Generous fixed gas limits: viem's estimate would run before the permit is mined, and a fixed
// limit keeps every transaction one round trip. (Permit ≈ 80k, transferFrom and mint ≈ 60k.)
const GAS = 200_000n;
const RELAYER_ETH = 10n ** 24n;

/** Starts anvil for `deps.chain` (the network's chain id), puts the token at USDC's address, funds the relayer. */
export async function startAnvilChain(deps: AnvilChainDeps): Promise<SandboxEvmChain> {
  if (deps.network !== 'testnet') throw new Error('the real-chain sandbox runs testnet chain ids only');
  const deployment = USDC_EVM[deps.network][deps.chain];
  const node = await startAnvil({ chainId: deployment.chainId });
  try {
    const cctp = sandboxCctpAddresses(deps.network, deps.chain);
    await installToken(
      node.url,
      deployment.usdc,
      deployment.eip712Name,
      deps.relayer.address,
      cctp.tokenMessenger,
    );
    await installCctp(node.url, {
      chain: deps.chain,
      network: deps.network,
      usdc: deployment.usdc,
      attester: deps.attester,
      feeRecipient: deps.cctpFeeRecipient,
      deployer: deps.relayer.address,
    });
    // A block on top of genesis: anvil answers a read at genesis from the current state, so the
    // oldest block a lagging view can show must be a mined one, whose state anvil keeps.
    await anvilCall(node.url, 'evm_mine', []);
    const baseline = await anvilCall<Hex>(node.url, 'evm_snapshot');
    const baselineBlock = BigInt(await anvilCall<Hex>(node.url, 'eth_blockNumber'));
    const state: AnvilChainState = {
      deps,
      node,
      usdc: deployment.usdc,
      clock: createBlockClock(baselineBlock),
      met: new Set(),
      relayerNonce: Number(
        await anvilCall<Hex>(node.url, 'eth_getTransactionCount', [deps.relayer.address, 'latest']),
      ),
      baseline,
      baselineBlock,
      tail: Promise.resolve(),
    };
    const ticker = startBlockTicker(state);
    const api = anvilChainApi(state);
    return {
      ...api,
      close: async () => {
        clearInterval(ticker);
        await api.close();
      },
    };
  } catch (err) {
    await node.stop(500);
    throw err;
  }
}

function anvilChainApi(s: AnvilChainState): SandboxEvmChain {
  return {
    chain: s.deps.chain,
    node: { kind: 'anvil', url: s.node.url, pid: s.node.pid },
    transferWithPermit: (permit, amount) => serial(s, () => transferWithPermit(s, permit, amount)),
    pay: (recipient, amount) =>
      serial(s, async () => {
        s.met.add(recipient.toLowerCase());
        return await sendRelayerTx(
          s,
          encodeFunctionData({ abi: ABI, functionName: 'mint', args: [recipient, amount] }),
        );
      }).then((r) => {
        // A blacklisted recipient cannot receive USDC: the mint reverts and nothing is paid.
        if (!r.ok) throw new Error(`${s.deps.chain}: the mint to ${recipient} (${r.hash}) reverted`);
        return r.hash;
      }),
    balanceOf: (address) => readUint(s, 'balanceOf', [address], 'latest'),
    totalSupply: () => readUint(s, 'totalSupply', [], 'latest'),
    nativeBalance: async (address) =>
      BigInt(await anvilCall<Hex>(s.node.url, 'eth_getBalance', [address, 'latest'])),
    setNativeBalance: async (address, wei) => {
      s.met.add(address.toLowerCase());
      await anvilCall(s.node.url, 'anvil_setBalance', [address, toHex(wei)]);
    },
    giveGas: (address) => giveGas(s, address),
    blockNumber: async () => BigInt(await anvilCall<Hex>(s.node.url, 'eth_blockNumber')),
    sentMessages: (txHash) =>
      readSentMessages(
        s.node.url,
        sandboxCctpAddresses(s.deps.network, s.deps.chain).messageTransmitter,
        txHash,
      ),
    setBlacklisted: (address, on) => serial(s, () => setBlacklisted(s, address, on)),
    nonces: async (owner) => {
      const lag = s.deps.config().rpcNonceLagMs;
      const visibleAt = lag > 0 ? toHex(s.clock.headAt(lag, Date.now())) : 'latest';
      const [expected, visible] = await Promise.all([
        readUint(s, 'nonces', [owner], 'latest'),
        readUint(s, 'nonces', [owner], visibleAt),
      ]);
      return { expected, visible };
    },
    useNoncesOutside: (owner, count) => serial(s, () => useNoncesOutside(s, owner, count)),
    setBalance: (address, amount) => serial(s, () => setBalance(s, address, amount)),
    meet: (address) => meet(s, address),
    rpc: (body) => handleLaggingRpc(s, body, { meet: (a) => meet(s, a) }),
    reset: () => serial(s, () => resetChain(s)),
    close: () => s.node.stop(),
  };
}

/**
 * A live chain makes blocks whether or not anyone pays: anvil (automine) makes one per transaction
 * only. Without new blocks a worker waiting for "a block at least as new as the refusal" or "a
 * block past the permit's deadline" would wait for ever, so an empty block is mined whenever none
 * was in the last `BLOCK_TIME_MS`, as Base or Arbitrum make one every second or two.
 */
const BLOCK_TIME_MS = 1_000;

function startBlockTicker(s: AnvilChainState): NodeJS.Timeout {
  const timer = setInterval(() => {
    if (Date.now() - s.clock.lastMinedAt() < BLOCK_TIME_MS) return;
    serial(s, async () => {
      await anvilCall(s.node.url, 'evm_mine', []);
      s.clock.record(BigInt(await anvilCall<Hex>(s.node.url, 'eth_blockNumber')), Date.now());
    }).catch(() => {
      // anvil stopping (the sandbox closing): the next tick, if any, tries again.
    });
  }, BLOCK_TIME_MS / 4);
  timer.unref();
  return timer;
}

/** Runs `fn` after every change queued before it on this chain (a relayer has one nonce sequence). */
export function serial<T>(s: AnvilChainState, fn: () => Promise<T>): Promise<T> {
  const run = s.tail.then(fn, fn);
  s.tail = run.catch(() => {});
  return run;
}

/**
 * Places the token's runtime code at `usdc`: the creation code run by eth_call (constructor and
 * immutables included) returns the code to install, so nothing is deployed elsewhere first.
 */
async function installToken(
  url: string,
  usdc: `0x${string}`,
  name: string,
  minter: `0x${string}`,
  cctpMinter: `0x${string}`,
): Promise<void> {
  const data = encodeDeployData({
    abi: ABI,
    bytecode: artifactJson.bytecode as Hex,
    args: [name, minter, cctpMinter],
  });
  const code = await anvilCall<Hex>(url, 'eth_call', [{ from: minter, data, gas: '0x1c9c380' }, 'latest']);
  await anvilCall(url, 'anvil_setCode', [usdc, code]);
  await anvilCall(url, 'anvil_setBalance', [minter, toHex(RELAYER_ETH)]);
}

/** The blacklister (the relayer) blacklists or unblacklists `address`, in a transaction of its own. */
async function setBlacklisted(s: AnvilChainState, address: string, on: boolean): Promise<void> {
  const functionName = on ? 'blacklist' : 'unBlacklist';
  const r = await sendRelayerTx(s, encodeFunctionData({ abi: ABI, functionName, args: [address] }));
  if (!r.ok) throw new Error(`${s.deps.chain}: ${functionName}(${address}) ${r.hash} reverted`);
}

async function readUint(s: AnvilChainState, fn: UintRead, args: unknown[], block: string): Promise<bigint> {
  const raw = await anvilCall<Hex>(s.node.url, 'eth_call', [
    { to: s.usdc, data: uintCallData(fn, args) },
    block,
  ]);
  return decodeUint(fn, raw);
}

type UintRead = 'balanceOf' | 'nonces' | 'totalSupply';
const uintCallData = (fn: UintRead, args: unknown[]): Hex =>
  encodeFunctionData({ abi: ABI, functionName: fn, args });
const decodeUint = (fn: UintRead, raw: Hex): bigint =>
  decodeFunctionResult({ abi: ABI, functionName: fn, data: raw }) as bigint;

/** Signs and sends one relayer transaction to the token, and waits for its receipt (anvil mines at once). */
async function sendRelayerTx(s: AnvilChainState, data: Hex): Promise<{ hash: string; ok: boolean }> {
  const deployment = USDC_EVM[s.deps.network][s.deps.chain];
  const raw = await s.deps.relayer.signTransaction({
    type: 'eip1559',
    chainId: deployment.chainId,
    to: s.usdc,
    data,
    gas: GAS,
    nonce: s.relayerNonce,
    maxFeePerGas: 1_000_000_000n,
    maxPriorityFeePerGas: 0n,
  });
  s.relayerNonce += 1;
  // Anvil automines: the synchronous send (EIP-7966) answers with the receipt, in one round trip.
  const receipt = await anvilCall<{ transactionHash: string; status: string; blockNumber: Hex }>(
    s.node.url,
    'eth_sendRawTransactionSync',
    [raw],
  );
  s.clock.record(BigInt(receipt.blockNumber), Date.now());
  return { hash: receipt.transactionHash, ok: receipt.status === '0x1' };
}

/** Funds `address` once with the configured amount, the first time the sandbox meets it. */
async function meet(s: AnvilChainState, address: string): Promise<void> {
  if (s.met.has(address.toLowerCase())) return;
  await serial(s, () => fundIfNew(s, address));
}

/**
 * Inside the serial queue: mints the configured USDC to an address not met before and gives it
 * native gas, here and (through `onMet`) on every other chain: an owner on the CCTP road pays its
 * burn here and its mint on the destination (docs/sandbox.md "CCTP v2").
 */
async function fundIfNew(s: AnvilChainState, address: string): Promise<void> {
  const key = address.toLowerCase();
  if (s.met.has(key)) return;
  s.met.add(key);
  const amount = fundingAmount(s.deps.config());
  if (amount > 0n) {
    const r = await sendRelayerTx(
      s,
      encodeFunctionData({ abi: ABI, functionName: 'mint', args: [address, amount] }),
    );
    // A blacklisted address cannot receive USDC: it is funded when the sandbox meets it again, unlisted.
    if (!r.ok) {
      s.met.delete(key);
      return;
    }
  }
  await giveGas(s, address);
  await s.deps.onMet?.(address);
}

/** Tops `address` up to the configured native gas (`nativeBalance`) when it holds less; no USDC, not "met". */
async function giveGas(s: AnvilChainState, address: string): Promise<void> {
  const gas = parseEther(s.deps.config().nativeBalance);
  const held = BigInt(await anvilCall<Hex>(s.node.url, 'eth_getBalance', [address, 'latest']));
  if (held < gas) await anvilCall(s.node.url, 'anvil_setBalance', [address, toHex(gas)]);
}

/**
 * The service's transfer on the source chain: simulate `permit(owner, relayer, amount, …)` (a
 * revert is the refusal; its cause is named from the contract's state), check the owner's balance,
 * then send the permit and `transferFrom(owner → deposit, amount)`. The relayer submits the
 * permit with its own address and the row's amount: the contract then checks that the owner
 * signed exactly that.
 */
async function transferWithPermit(
  s: AnvilChainState,
  permit: ParsedPermit,
  amount: bigint,
): Promise<EvmTransferOutcome> {
  const owner = permit.owner;
  await fundIfNew(s, owner);
  const { r, s: sig, v, yParity } = parseSignature(permit.signature);
  const permitData = encodeFunctionData({
    abi: ABI,
    functionName: 'permit',
    args: [
      owner,
      s.deps.relayer.address,
      amount,
      permit.deadline,
      Number(v ?? BigInt(27 + (yParity ?? 0))),
      r,
      sig,
    ],
  });
  // The permit's simulation and the owner's balance, read in one batch of the same state.
  const [simulated, balance] = await anvilCalls(s.node.url, [
    simulation(s, permitData),
    ['eth_call', [{ to: s.usdc, data: uintCallData('balanceOf', [owner]) }, 'latest']],
  ]);
  // anvilCalls answers every call (one anvil left out comes back as an error).
  if (!simulated || !balance) throw new Error(`${s.deps.chain}: anvil answered the batch short`);
  if (!simulated.ok) return { ok: false, ...(await permitRefusal(s, simulated.error, permit, amount)) };
  if (!balance.ok) throw balance.error;
  if (decodeUint('balanceOf', balance.result as Hex) < amount)
    return { ok: false, code: 'insufficient_balance', message: 'the owner’s USDC balance is too low' };
  const sent = await sendRelayerTx(s, permitData);
  if (!sent.ok) {
    return { ok: false, code: 'permit_reverted', message: `the permit transaction ${sent.hash} reverted` };
  }
  const moved = await sendRelayerTx(
    s,
    encodeFunctionData({ abi: ABI, functionName: 'transferFrom', args: [owner, s.deps.deposit, amount] }),
  );
  if (!moved.ok) {
    return {
      ok: false,
      code: 'insufficient_balance',
      message: `transferFrom ${moved.hash} reverted: the balance moved away`,
    };
  }
  return { ok: true, txHash: moved.hash, permitTxHash: sent.hash };
}

/** The relayer's `permit` run as a call: `pending` runs it in the next block's environment (timestamp now), where it would execute. */
function simulation(s: AnvilChainState, data: Hex): readonly [string, unknown[]] {
  return ['eth_call', [{ from: s.deps.relayer.address, to: s.usdc, data, gas: toHex(GAS) }, 'pending']];
}

/** Why the simulated permit reverted, named from its error and the contract's state: the refusal. */
async function permitRefusal(
  s: AnvilChainState,
  err: AnvilRpcError,
  permit: ParsedPermit,
  amount: bigint,
): Promise<Refusal> {
  let error: string | undefined;
  if (typeof err.data === 'string' && /^0x[0-9a-fA-F]{8,}$/.test(err.data)) {
    try {
      error = decodeErrorResult({ abi: ABI, data: err.data as Hex }).errorName;
    } catch {
      error = undefined;
    }
  }
  return diagnosePermitRevert({
    error,
    message: err.message,
    permit,
    amount,
    spender: s.deps.relayer.address,
    nonce: await readUint(s, 'nonces', [permit.owner], 'latest'),
  });
}

/**
 * Uses `count` of the owner's nonces as a signer elsewhere would. The sandbox holds no owner key,
 * so it moves the contract's `_nonces[owner]` slot directly, in a block of its own: a lagging view
 * sees it only after the lag, as it would a real permit.
 */
async function useNoncesOutside(s: AnvilChainState, owner: string, count: number): Promise<bigint[]> {
  const current = await readUint(s, 'nonces', [owner], 'latest');
  const slot = keccak256(
    encodeAbiParameters(
      [{ type: 'address' }, { type: 'uint256' }],
      [owner as `0x${string}`, BigInt(SLOTS['_nonces'] ?? 7)],
    ),
  );
  const next = current + BigInt(count);
  // Anvil keeps a block's state once the next block is mined on top of it, and answers the newest
  // block from the live state: so first a block that seals the head as it is, then the change in
  // a block of its own.
  await anvilCall(s.node.url, 'evm_mine', []);
  await anvilCall(s.node.url, 'anvil_setStorageAt', [s.usdc, slot, toWord(next)]);
  await anvilCall(s.node.url, 'evm_mine', []);
  s.clock.record(BigInt(await anvilCall<Hex>(s.node.url, 'eth_blockNumber')), Date.now());
  return Array.from({ length: count }, (_, i) => current + BigInt(i));
}

async function setBalance(s: AnvilChainState, address: string, amount: bigint): Promise<void> {
  s.met.add(address.toLowerCase());
  const current = await readUint(s, 'balanceOf', [address], 'latest');
  if (current === amount) return;
  const [fn, diff] =
    amount > current ? (['mint', amount - current] as const) : (['burn', current - amount] as const);
  const r = await sendRelayerTx(s, encodeFunctionData({ abi: ABI, functionName: fn, args: [address, diff] }));
  if (!r.ok) throw new Error(`${fn} ${r.hash} reverted`);
}

/** Reverts to the snapshot taken after start-up (then takes it again: a revert consumes it). */
async function resetChain(s: AnvilChainState): Promise<void> {
  const ok = await anvilCall<boolean>(s.node.url, 'evm_revert', [s.baseline]);
  if (!ok) throw new Error(`${s.deps.chain}: anvil could not revert to the start-up snapshot`);
  s.baseline = await anvilCall<Hex>(s.node.url, 'evm_snapshot');
  await resumeWallClock(s.node.url);
  s.clock.truncate(s.baselineBlock);
  s.met = new Set();
  s.relayerNonce = Number(
    await anvilCall<Hex>(s.node.url, 'eth_getTransactionCount', [s.deps.relayer.address, 'latest']),
  );
}

/**
 * `evm_revert` also rewinds anvil's clock to the snapshot's block: without this, every block after
 * a reset would carry a timestamp behind the wall clock by the time since start-up, and a worker
 * waiting for a block as new as a refusal, or past a permit's deadline, would wait that much longer
 * (minutes, late in a test file). A live chain's timestamps follow the wall clock: set it back to
 * now. Anvil counts whole seconds, so the call is made again if a second boundary passed while it
 * was in flight (anvil may then have read the next second and put its clock a second behind).
 */
async function resumeWallClock(url: string): Promise<void> {
  for (let i = 0; i < 3; i++) {
    const second = Math.floor(Date.now() / 1000);
    await anvilCall(url, 'evm_setTime', [second]);
    if (Math.floor(Date.now() / 1000) === second) return;
  }
}

export const toHex = (n: bigint): Hex => `0x${n.toString(16)}`;
const toWord = (n: bigint): Hex => `0x${n.toString(16).padStart(64, '0')}`;
