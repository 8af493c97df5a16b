import { createPublicClient, http, TransactionReceiptNotFoundError, type Hex, type PublicClient } from 'viem';
import type { EvmChain } from '../../../domain/chains.ts';
import { displayUrl } from '../../../domain/url-display.ts';
import { ChainReadError, SigningError, SIGNING_ERROR_CODES } from '../../errors.ts';
import type { Fees } from './tx-decision.ts';

/*
 * The chain as an owner's transactions need it (docs/cctp.md "The owner's transactions"), read with
 * viem over `EVM_RPC_URL_<CHAIN>`: the owner's nonces, receipts, fees, balance, the head, and the
 * broadcast of a signed transaction. Every failure to read is a ChainReadError (transient: the step
 * is tried again); a broadcast's answer is classified, never thrown.
 */

/** One chain's RPC, and the chain id its transactions are signed for. */
export type OwnerChain = {
  readonly chain: EvmChain;
  readonly chainId: number;
  readonly client: PublicClient;
  readonly url: string;
  /** Set once eth_chainId answered `chainId`. */
  checked: boolean;
};

export function createOwnerChain(
  chain: EvmChain,
  chainId: number,
  url: string,
  options: { readonly pollingIntervalMs: number; readonly timeoutMs: number },
): OwnerChain {
  const client = createPublicClient({
    transport: http(url, { timeout: options.timeoutMs, retryCount: 0 }),
    pollingInterval: options.pollingIntervalMs,
  });
  return { chain, chainId, client, url, checked: false };
}

function readFailed(oc: OwnerChain, what: string, cause: unknown): ChainReadError {
  const message =
    cause instanceof Error ? ((cause as { shortMessage?: string }).shortMessage ?? cause.message) : '';
  return new ChainReadError(
    SIGNING_ERROR_CODES.rpcFailed,
    `${oc.chain} RPC ${displayUrl(oc.url)}: ${what} failed: ${message.slice(0, 200)}`,
    { cause, meta: { chain: oc.chain } },
  );
}

async function read<T>(oc: OwnerChain, what: string, f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (err) {
    throw readFailed(oc, what, err);
  }
}

/**
 * Refuses an RPC of another chain than the one the transaction is signed for (a mainnet RPC under
 * NETWORK=testnet): a signed transaction is valid on its chain id only, and is sent only there.
 */
export async function checkChainId(oc: OwnerChain): Promise<void> {
  if (oc.checked) return;
  const id = await read(oc, 'eth_chainId', () => oc.client.getChainId());
  if (id !== oc.chainId) {
    throw new SigningError(
      SIGNING_ERROR_CODES.rpcFailed,
      `${oc.chain} RPC ${displayUrl(oc.url)} serves chain id ${id}, not ${oc.chainId}: nothing is signed for it`,
    );
  }
  oc.checked = true;
}

/** The owner's nonce: `latest` counts its mined transactions, `pending` those the node holds too. */
export function readNonce(oc: OwnerChain, owner: string, blockTag: 'latest' | 'pending'): Promise<bigint> {
  return read(oc, 'eth_getTransactionCount', async () =>
    BigInt(await oc.client.getTransactionCount({ address: owner as Hex, blockTag })),
  );
}

/** The receipt of the first of `hashes` that is mined, if any. */
export async function readReceipt(
  oc: OwnerChain,
  hashes: readonly string[],
): Promise<{ readonly hash: string; readonly success: boolean; readonly block: bigint } | undefined> {
  for (const hash of hashes) {
    try {
      const r = await oc.client.getTransactionReceipt({ hash: hash as Hex });
      return { hash, success: r.status === 'success', block: r.blockNumber };
    } catch (err) {
      if (err instanceof TransactionReceiptNotFoundError) continue;
      throw readFailed(oc, 'eth_getTransactionReceipt', err);
    }
  }
  return undefined;
}

/**
 * The next block's base fee (eth_feeHistory) and the fees the chain suggests: the node's priority
 * fee (eth_maxPriorityFeePerGas), and a maxFee of twice the base fee plus it, which a transaction
 * keeps through six full blocks in a row.
 */
export async function readFees(oc: OwnerChain): Promise<{ baseFee: bigint; suggested: Fees }> {
  return read(oc, 'eth_feeHistory', async () => {
    const [history, tip] = await Promise.all([
      oc.client.getFeeHistory({ blockCount: 1, rewardPercentiles: [], blockTag: 'latest' }),
      oc.client.estimateMaxPriorityFeePerGas(),
    ]);
    const baseFee = history.baseFeePerGas.at(-1) ?? 0n;
    return { baseFee, suggested: { maxFee: 2n * baseFee + tip, tip } };
  });
}

export function readBalance(oc: OwnerChain, owner: string): Promise<bigint> {
  return read(oc, 'eth_getBalance', () => oc.client.getBalance({ address: owner as Hex }));
}

export function readHead(oc: OwnerChain): Promise<bigint> {
  return read(oc, 'eth_blockNumber', () => oc.client.getBlockNumber({ cacheTime: 0 }));
}

/** The gas a call from the owner takes (eth_estimateGas), with a fifth more as headroom. */
export async function estimateGas(
  oc: OwnerChain,
  owner: string,
  call: { readonly to: string; readonly data: string; readonly value: bigint },
): Promise<bigint> {
  const gas = await read(oc, 'eth_estimateGas', () =>
    oc.client.estimateGas({
      account: owner as Hex,
      to: call.to as Hex,
      data: call.data as Hex,
      value: call.value,
    }),
  );
  return gas + gas / 5n;
}

/**
 * What a broadcast came to: `sent` the node took it (or had it already); `used` its nonce is taken
 * (mined, or another transaction holds it: the next look tells); `underpriced` the node keeps a
 * better-paid one at its nonce; `lacks-gas` the owner cannot pay for it; `unknown` no clear answer
 * (a network error): it may have gone out.
 */
export type BroadcastResult =
  | { readonly kind: 'sent' | 'used' | 'underpriced' | 'lacks-gas' }
  | { readonly kind: 'unknown'; readonly message: string };

const ANSWERS: readonly [RegExp, BroadcastResult['kind']][] = [
  [/already known|known transaction|already imported|already exists/i, 'sent'],
  [/nonce too low|nonce has already been used|nonce.*too low/i, 'used'],
  [/underpriced|replacement|less than (the )?block base fee|below.*base fee/i, 'underpriced'],
  [/insufficient funds|lack of funds|exceeds balance/i, 'lacks-gas'],
];

/** eth_sendRawTransaction of a signed transaction, its answer classified. */
export async function broadcast(oc: OwnerChain, raw: string): Promise<BroadcastResult> {
  try {
    await oc.client.sendRawTransaction({ serializedTransaction: raw as Hex });
    return { kind: 'sent' };
  } catch (err) {
    const text =
      err instanceof Error ? `${err.message} ${String((err as { details?: unknown }).details ?? '')}` : '';
    for (const [pattern, kind] of ANSWERS) if (pattern.test(text)) return { kind } as BroadcastResult;
    return { kind: 'unknown', message: text.slice(0, 300) };
  }
}

/** The chain's finalized block: what no reorg can drop (eth_getBlockByNumber "finalized"). */
export function readFinalized(oc: OwnerChain): Promise<bigint> {
  return read(
    oc,
    'eth_getBlockByNumber',
    async () => (await oc.client.getBlock({ blockTag: 'finalized' })).number,
  );
}

/** The owner's nonce in the state of block `block` (its transactions mined up to it). */
export function readNonceAt(oc: OwnerChain, owner: string, block: bigint): Promise<bigint> {
  return read(oc, 'eth_getTransactionCount', async () =>
    BigInt(await oc.client.getTransactionCount({ address: owner as Hex, blockNumber: block })),
  );
}

/**
 * The hash of the transaction of `owner` at `nonce` in block `block`; undefined when the block
 * holds none (an answer from another node than the state's). A block not served is a ChainReadError.
 */
export async function readOwnerTxInBlock(
  oc: OwnerChain,
  block: bigint,
  owner: string,
  nonce: bigint,
): Promise<string | undefined> {
  const b = await read(oc, 'eth_getBlockByNumber', () =>
    oc.client.getBlock({ blockNumber: block, includeTransactions: true }),
  );
  const tx = b.transactions.find(
    (t) => t.from.toLowerCase() === owner.toLowerCase() && BigInt(t.nonce) === nonce,
  );
  return tx?.hash;
}
