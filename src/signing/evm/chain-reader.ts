import {
  decodeFunctionResult,
  encodeFunctionData,
  parseAbi,
  prepareEncodeFunctionData,
  type Hex,
} from 'viem';
import type { Config } from '../../config/config.ts';
import { EVM_CHAINS, USDC_EVM, type EvmChain } from '../../domain/chains.ts';
import { formatUsdc } from '../../domain/money.ts';
import { displayUrl } from '../../domain/url-display.ts';
import type { Logger } from '../../log/logger.ts';
import { ChainReadError, SIGNING_ERROR_CODES } from '../errors.ts';
import type { BalanceReadingAt, BlockRef, BlockTag, ChainReader, NonceReading } from '../types.ts';
import { batchWhileBusy, type Settled } from '../busy-batch.ts';
import { blacklistedAllAnswer, blacklistedAllCall } from './blacklist-reads.ts';
import { postJsonRpc, postJsonRpcBatch, type JsonRpcAnswer } from '../json-rpc.ts';

const USDC_ABI = parseAbi([
  'function nonces(address owner) view returns (uint256)',
  'function balanceOf(address owner) view returns (uint256)',
  'function name() view returns (string)',
  'function version() view returns (string)',
  'function totalSupply() view returns (uint256)',
  'function isBlacklisted(address account) view returns (bool)',
]);

type UsdcView = 'nonces' | 'balanceOf' | 'name' | 'version' | 'totalSupply' | 'isBlacklisted';

/** The contract's reads, plus the two the EIP-712 domain needs. */
export type EvmChainReader = ChainReader & {
  /** USDC's `name()`; undefined when no RPC is configured for the chain. */
  usdcName(chain: EvmChain): Promise<string | undefined>;
  /** USDC's `version()`; undefined when no RPC is configured for the chain. */
  usdcVersion(chain: EvmChain): Promise<string | undefined>;
  /** Whether `EVM_RPC_URL_<chain>` is configured. */
  hasRpc(chain: EvmChain): boolean;
  /** The native balance (wei) of `owner` (eth_getBalance); undefined without RPC for the chain. */
  nativeBalance(chain: EvmChain, owner: string): Promise<bigint | undefined>;
  /** The chain's current gas price (wei per gas, eth_gasPrice); undefined without RPC. */
  gasPrice(chain: EvmChain): Promise<bigint | undefined>;
  /** USDC's `isBlacklisted(address)` at `latest` (FiatToken's blacklist); undefined without an RPC. */
  usdcBlacklisted(chain: EvmChain, address: string): Promise<boolean | undefined>;
};

export type ChainReaderDeps = {
  readonly config: Pick<Config, 'evmRpcUrl' | 'network'>;
  readonly fetch?: typeof fetch;
  readonly logger?: Logger;
  /** Per call; a nonce read sits on the path of every permit, so it must fail fast. Default 2 s. */
  readonly timeoutMs?: number;
};

export const DEFAULT_RPC_TIMEOUT_MS = 2_000;

/** One chain's endpoint, as the read functions below need it. */
type Endpoint = {
  readonly chain: EvmChain;
  readonly url: string;
  readonly usdc: string;
  /** A fetch to send with (tests); absent, node:http (json-rpc.ts). */
  readonly fetch: typeof fetch | undefined;
  readonly timeoutMs: number;
  nextId(): number;
};

function readFailure(ep: Endpoint, shortMessage: string, cause?: unknown): ChainReadError {
  const where = { chain: ep.chain, url: displayUrl(ep.url) };
  return new ChainReadError(SIGNING_ERROR_CODES.rpcFailed, `${ep.chain} RPC ${where.url}: ${shortMessage}`, {
    cause,
    meta: where,
  });
}

/** One JSON-RPC call; a JSON-RPC error becomes a ChainReadError quoting the node's message. */
async function rpcCall(ep: Endpoint, method: string, params: unknown[]): Promise<unknown> {
  const body = await postJsonRpc(ep.url, { method, params, id: ep.nextId() }, postOptions(ep));
  return resultOf(ep, method, body);
}

/** How a request to the endpoint is sent, and how its failure reads. */
function postOptions(ep: Endpoint) {
  return {
    ...(ep.fetch ? { fetch: ep.fetch } : {}),
    timeoutMs: ep.timeoutMs,
    fail: (m: string) => readFailure(ep, m),
  };
}

/** The result of one JSON-RPC answer; its error as a ChainReadError quoting the node's message. */
function resultOf(ep: Endpoint, method: string, body: JsonRpcAnswer): unknown {
  if (body.error !== undefined) {
    const message = typeof body.error?.message === 'string' ? body.error.message.slice(0, 200) : 'error';
    throw readFailure(ep, `${method} refused: ${message}`);
  }
  return body.result;
}

/**
 * Where a read is made: `latest`, or one block named by its hash (EIP-1898), so that a node on
 * another fork, or a load-balanced endpoint answering from another node, cannot answer for it.
 */
type ReadAt = 'latest' | { readonly blockHash: string };

/** `eth_call` of one USDC view at `at`, decoded. */
async function readUsdc(
  ep: Endpoint,
  functionName: UsdcView,
  args: readonly unknown[],
  at: ReadAt,
): Promise<unknown> {
  const block = at === 'latest' ? 'latest' : { blockHash: at.blockHash, requireCanonical: true };
  const result = await rpcCall(ep, 'eth_call', [usdcCall(ep, functionName, args), block]);
  return decodeUsdc(ep, functionName, result);
}

/**
 * Each USDC view's ABI item and selector, found and hashed once: viem's encodeFunctionData would
 * otherwise hash the signature again for every call (a keccak per `isBlacklisted` of each recipient).
 */
const PREPARED = new Map<UsdcView, ReturnType<typeof prepareEncodeFunctionData>>();

function prepared(functionName: UsdcView): ReturnType<typeof prepareEncodeFunctionData> {
  let p = PREPARED.get(functionName);
  if (p === undefined) {
    p = prepareEncodeFunctionData({ abi: USDC_ABI, functionName } as Parameters<
      typeof prepareEncodeFunctionData
    >[0]);
    PREPARED.set(functionName, p);
  }
  return p;
}

/** The `eth_call` transaction object of one USDC view. */
function usdcCall(ep: Endpoint, functionName: UsdcView, args: readonly unknown[]) {
  const data = encodeFunctionData({ ...prepared(functionName), args } as Parameters<
    typeof encodeFunctionData
  >[0]);
  return { to: ep.usdc, data };
}

/** An `eth_call` result of one USDC view, decoded, or a ChainReadError. */
function decodeUsdc(ep: Endpoint, functionName: UsdcView, result: unknown): unknown {
  if (typeof result !== 'string' || !/^0x([0-9a-fA-F]{2})*$/.test(result) || result === '0x') {
    throw readFailure(ep, 'eth_call answered no data (is USDC deployed at the configured address?)');
  }
  try {
    return decodeFunctionResult({ abi: USDC_ABI, functionName, data: result as Hex } as Parameters<
      typeof decodeFunctionResult
    >[0]);
  } catch (cause) {
    throw new ChainReadError(
      SIGNING_ERROR_CODES.rpcFailed,
      `${ep.chain} RPC: ${functionName}() answer cannot be decoded`,
      { cause, meta: { chain: ep.chain } },
    );
  }
}

async function readUint(
  ep: Endpoint,
  fn: 'nonces' | 'balanceOf' | 'totalSupply',
  owner: string | undefined,
  at: ReadAt,
): Promise<bigint> {
  const v = await readUsdc(ep, fn, owner === undefined ? [] : [owner], at);
  if (typeof v !== 'bigint')
    throw new ChainReadError(SIGNING_ERROR_CODES.rpcFailed, `${ep.chain} RPC: ${fn}() is not a number`);
  return v;
}

async function readBlacklisted(ep: Endpoint, address: string): Promise<boolean> {
  return asBlacklisted(ep, await readUsdc(ep, 'isBlacklisted', [address], 'latest'));
}

function asBlacklisted(ep: Endpoint, v: unknown): boolean {
  if (typeof v !== 'boolean')
    throw new ChainReadError(
      SIGNING_ERROR_CODES.rpcFailed,
      `${ep.chain} RPC: isBlacklisted() is not a boolean`,
    );
  return v;
}

/** The most `isBlacklisted` reads one request carries (providers cap batches; 20 is under all). */
const BLACKLIST_BATCH_MAX = 20;

/**
 * `isBlacklisted` of several addresses at `latest` (one alone is a plain call): all of them in one
 * `eth_call` (blacklist-reads.ts), or — where the node refuses that call or answers it with anything
 * but one `bool` per address — each in its own `eth_call` of one JSON-RPC batch, answered and
 * checked on its own. A request that fails fails every read it carried: the transfers read again.
 */
async function readBlacklistedMany(ep: Endpoint, addresses: readonly string[]): Promise<Settled<boolean>[]> {
  if (addresses.length === 1) return [await settled(() => readBlacklisted(ep, addresses[0] as string))];
  const all = await readBlacklistedAll(ep, addresses);
  if (all !== undefined) return all.map((value) => ({ ok: true, value }));
  return await readBlacklistedEach(ep, addresses);
}

/**
 * Every address's `isBlacklisted` in one `eth_call`; undefined when the node refused the call or
 * answered it with anything but one `bool` per address. Throws when the request failed.
 */
async function readBlacklistedAll(
  ep: Endpoint,
  addresses: readonly string[],
): Promise<boolean[] | undefined> {
  const call = blacklistedAllCall(ep.usdc, addresses);
  if (call === undefined) return undefined;
  const body = await postJsonRpc(
    ep.url,
    { method: 'eth_call', params: [call, 'latest'], id: ep.nextId() },
    postOptions(ep),
  );
  return body.error === undefined ? blacklistedAllAnswer(body.result, addresses.length) : undefined;
}

/**
 * `isBlacklisted` of several addresses in one JSON-RPC batch, each its own `eth_call`. A call the
 * batch answer holds no answer for (an endpoint that takes no batches) is read again alone.
 */
async function readBlacklistedEach(ep: Endpoint, addresses: readonly string[]): Promise<Settled<boolean>[]> {
  const requests = addresses.map((a) => ({
    method: 'eth_call',
    params: [usdcCall(ep, 'isBlacklisted', [a]), 'latest'],
    id: ep.nextId(),
  }));
  const answers = await postJsonRpcBatch(ep.url, requests, postOptions(ep));
  return await Promise.all(
    answers.map((a: JsonRpcAnswer | undefined, i) =>
      settled(async () =>
        a === undefined
          ? await readBlacklisted(ep, addresses[i] as string)
          : asBlacklisted(ep, decodeUsdc(ep, 'isBlacklisted', resultOf(ep, 'eth_call', a))),
      ),
    ),
  );
}

async function settled<T>(read: () => Promise<T>): Promise<Settled<T>> {
  try {
    return { ok: true, value: await read() };
  } catch (error) {
    return { ok: false, error };
  }
}

async function readString(ep: Endpoint, fn: 'name' | 'version'): Promise<string> {
  const v = await readUsdc(ep, fn, [], 'latest');
  if (typeof v !== 'string' || v.length === 0 || v.length > 100)
    throw new ChainReadError(
      SIGNING_ERROR_CODES.rpcFailed,
      `${ep.chain} RPC: ${fn}() is not a usable string`,
    );
  return v;
}

const QUANTITY = /^0x[0-9a-fA-F]{1,64}$/;

/**
 * The header of the node's `latest` or `finalized` block. A node that cannot say which block it
 * answers from (no header, or one without number, timestamp and hash) proves nothing about the
 * chain: that is an error here.
 */
async function readHead(ep: Endpoint, tag: BlockTag): Promise<BlockRef> {
  const header = await rpcCall(ep, 'eth_getBlockByNumber', [tag, false]);
  const h = (typeof header === 'object' && header !== null ? header : {}) as Record<string, unknown>;
  const { number, timestamp, hash } = h;
  if (
    typeof number !== 'string' ||
    !QUANTITY.test(number) ||
    typeof timestamp !== 'string' ||
    !QUANTITY.test(timestamp) ||
    typeof hash !== 'string' ||
    !/^0x[0-9a-fA-F]{64}$/.test(hash)
  ) {
    throw new ChainReadError(
      SIGNING_ERROR_CODES.rpcBlockUnknown,
      `${ep.chain} RPC ${displayUrl(ep.url)}: the ${tag} block header has no number, timestamp or hash`,
      { meta: { chain: ep.chain } },
    );
  }
  return { number: BigInt(number), timestamp: BigInt(timestamp), hash: hash.toLowerCase() };
}

/**
 * `nonces(owner)` at a known block: the header first, then the nonce at that very block, named by
 * its hash (never `latest`, which a load-balanced endpoint may answer from another node, nor a
 * number, which another fork may hold).
 */
async function readNonceAt(ep: Endpoint, owner: string, tag: BlockTag = 'latest'): Promise<NonceReading> {
  const block = await readHead(ep, tag);
  return { nonce: await readUint(ep, 'nonces', owner, { blockHash: block.hash }), block };
}

/** `balanceOf(owner)` at a known block (the header first, then the balance at that block's hash). */
async function readBalanceAt(ep: Endpoint, owner: string): Promise<BalanceReadingAt> {
  const block = await readHead(ep, 'latest');
  return { balance: await readUint(ep, 'balanceOf', owner, { blockHash: block.hash }), block };
}

/**
 * `balanceOf(owner)` as a balance a person may be shown (docs/rebalancing.md "Balances"): read with
 * USDC's `totalSupply()` after it, and refused as a reading when it is above it — no account holds
 * more than all the USDC on its chain (an RPC answering `2^256 − 1` is lying, or broken). A lagging
 * or load-balanced endpoint may answer the supply from a block before the balance's deposit: a
 * balance above the supply is read again, both, once before it is refused.
 */
async function readPlausibleBalance(ep: Endpoint, owner: string): Promise<bigint> {
  for (let attempt = 1; ; attempt++) {
    const balance = await readUint(ep, 'balanceOf', owner, 'latest');
    const supply = await readUint(ep, 'totalSupply', undefined, 'latest');
    if (balance <= supply) return balance;
    if (attempt >= 2) {
      throw new ChainReadError(
        SIGNING_ERROR_CODES.rpcFailed,
        `${ep.chain} RPC ${displayUrl(ep.url)}: balanceOf(${owner}) answers more than USDC's totalSupply() (${formatUsdc(supply)} USDC) on ${ep.chain}: not a balance`,
        { meta: { chain: ep.chain } },
      );
    }
    await new Promise((r) => setTimeout(r, PLAUSIBILITY_RETRY_MS));
  }
}
const PLAUSIBILITY_RETRY_MS = 500;

/** A JSON-RPC quantity answer as a bigint, or a ChainReadError naming the method. */
async function readQuantity(ep: Endpoint, method: string, params: unknown[]): Promise<bigint> {
  const result = await rpcCall(ep, method, params);
  if (typeof result !== 'string' || !QUANTITY.test(result))
    throw readFailure(ep, `${method} answered no quantity`);
  return BigInt(result);
}

/** The block a transaction was mined in, or null while the node has no receipt for it. */
async function readTxBlock(ep: Endpoint, hash: string): Promise<bigint | null> {
  const receipt = await rpcCall(ep, 'eth_getTransactionReceipt', [hash]);
  if (receipt === null || typeof receipt !== 'object') return null;
  const n = (receipt as { blockNumber?: unknown }).blockNumber;
  return typeof n === 'string' && QUANTITY.test(n) ? BigInt(n) : null;
}

/**
 * The blocks the first `max` of these transactions were mined in, by key: one receipt read each; a
 * transaction without a hash, not mined yet, or whose receipt cannot be read is left out.
 */
export async function minedBlocks(
  reader: Pick<ChainReader, 'txBlock'>,
  chain: EvmChain,
  txs: readonly { readonly holder: string; readonly txHash: string | null }[],
  max: number,
): Promise<Map<string, bigint>> {
  const mined = new Map<string, bigint>();
  const withTx = txs.filter((t) => t.txHash !== null).slice(0, max);
  await Promise.all(
    withTx.map(async (t) => {
      try {
        const block = await reader.txBlock(chain, t.txHash as string);
        if (typeof block === 'bigint') mined.set(t.holder, block);
      } catch {
        // unreadable now: left out
      }
    }),
  );
  return mined;
}

/** eth_call of USDC's views over `EVM_RPC_URL_<CHAIN>` (plain JSON-RPC over fetch, short timeouts). */
export function createChainReader(deps: ChainReaderDeps): EvmChainReader {
  let id = 0;
  const endpoint = (chain: EvmChain): Endpoint | undefined => {
    const url = deps.config.evmRpcUrl[chain];
    if (url === undefined) return undefined;
    return {
      chain,
      url,
      usdc: USDC_EVM[deps.config.network][chain].usdc,
      fetch: deps.fetch,
      timeoutMs: deps.timeoutMs ?? DEFAULT_RPC_TIMEOUT_MS,
      nextId: () => ++id,
    };
  };
  // Made here, with the reader (as the worker starts), not at a chain's first read: a batch of
  // several transfers' reads runs in the context its batcher was made in (busy-batch.ts), which must
  // be no transfer's (a transfer's trace would show the others' reads as calls of its open step).
  const blacklistBatches = new Map<EvmChain, (address: string) => Promise<boolean>>();
  for (const chain of EVM_CHAINS) {
    const ep = endpoint(chain);
    if (ep === undefined) continue;
    blacklistBatches.set(
      chain,
      batchWhileBusy(
        (addresses: readonly string[]) => readBlacklistedMany(ep, addresses),
        BLACKLIST_BATCH_MAX,
      ),
    );
  }
  /** `read` on the chain's endpoint, or undefined when no RPC is configured for it. */
  const onChain =
    <A extends unknown[], T>(read: (ep: Endpoint, ...args: A) => Promise<T>) =>
    async (chain: EvmChain, ...args: A): Promise<T | undefined> => {
      const ep = endpoint(chain);
      return ep === undefined ? undefined : await read(ep, ...args);
    };
  return {
    hasRpc: (chain) => deps.config.evmRpcUrl[chain] !== undefined,
    permitNonce: onChain((ep, owner: string) => readUint(ep, 'nonces', owner, 'latest')),
    permitNonceAtHead: onChain(readNonceAt),
    usdcBalance: onChain(readPlausibleBalance),
    usdcBalanceAtHead: onChain(readBalanceAt),
    txBlock: onChain(readTxBlock),
    usdcName: onChain((ep) => readString(ep, 'name')),
    usdcVersion: onChain((ep) => readString(ep, 'version')),
    nativeBalance: onChain((ep, owner: string) => readQuantity(ep, 'eth_getBalance', [owner, 'latest'])),
    gasPrice: onChain((ep) => readQuantity(ep, 'eth_gasPrice', [])),
    // Many transfers at once each read their recipient: the reads asked for while a request is in
    // flight go together (busy-batch.ts), 20 at most in one eth_call at `latest` that asks USDC
    // about each of them.
    // A chain with no batcher has no RPC configured.
    usdcBlacklisted: async (chain, address) => await blacklistBatches.get(chain)?.(address),
  };
}
