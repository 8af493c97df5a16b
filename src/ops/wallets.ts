import type { Redis } from 'ioredis';
import type { Config } from '../config/config.ts';
import { EVM_CHAINS, type EvmChain, type Network } from '../domain/chains.ts';
import { errorMessage, UsdcBatchError } from '../domain/errors.ts';
import { formatUsdc, tryParseUsdc } from '../domain/money.ts';
import { formatNative, gasNeeded } from '../domain/owner-gas.ts';
import { displayUrl } from '../domain/url-display.ts';
import { createChainReader, minedBlocks } from '../signing/evm/chain-reader.ts';
import { createNonceManager } from '../signing/evm/nonce-manager.ts';
import { postJsonRpc } from '../signing/json-rpc.ts';
import { createOwnerBalances, type OwnerBalances, type Reserved } from '../store/owner-balance.ts';
import { treasuryAddresses, type AddressOrigin, type TreasuryAddresses } from './public-addresses.ts';

/**
 * What `usdc-batch wallets` reports (docs/operating.md "The commands"): public addresses, and what the chains and
 * Redis say about them. Built only from public facts: no key, seed or RPC credential goes in.
 */
type EvmChainReport = {
  readonly chain: EvmChain;
  /** Whether `EVM_RPC_URL_<CHAIN>` is configured. */
  readonly rpc: boolean;
  /** The chain's `nonces(owner)`; null without RPC or when the read failed. */
  readonly permit_nonce: string | null;
  /** `balanceOf(owner)`, decimal USDC; null without RPC or when the read failed. */
  readonly usdc_balance: string | null;
  /**
   * The owner's native balance (ETH, POL), decimal: it pays the gas of the owner's own transactions
   * on the CCTP road (docs/cctp.md "Funding owners with gas"); null without RPC or when the read failed.
   */
  readonly native_gas: string | null;
  /** What its next transactions (an approval, a burn and a mint) cost at the chain's gas price now. */
  readonly gas_needed: string | null;
  /** `native_gas` is below `gas_needed`: the owner cannot pay for its next transactions here. */
  readonly gas_low: boolean | null;
  /** Why a configured RPC gave no answer. */
  readonly error: string | null;
  /** The shared nonce pool in Redis; null when Redis did not answer. */
  readonly nonce_pool: {
    readonly next: string;
    readonly holder: string | null;
    readonly held_nonce: string | null;
    readonly lease_until: string | null;
  } | null;
  /**
   * Decimal USDC of this owner's balance reserved for transfers in flight: `P:reserve:<CHAIN>:<owner>`
   * entries whose payment is not known mined (by the workers, nor — with RPC — by a receipt read
   * now); null when Redis did not answer.
   */
  readonly in_flight: string | null;
  /** How many transfers those reservations are for; null when Redis did not answer. */
  readonly in_flight_transfers: number | null;
};

/** One treasury owner (one key of the worker: EVM_PRIVATE_KEY, EVM_PRIVATE_KEY_FILE or EVM_KEYSTORE_FILE). */
type EvmOwnerReport = {
  /** 1-based position of its address in the configuration (the order owners are preferred in). */
  readonly position: number;
  readonly address: string;
  readonly chains: EvmChainReport[];
};

/** One chain across every owner. */
type EvmChainTotal = {
  readonly chain: EvmChain;
  readonly rpc: boolean;
  /** The owners' balances summed; null when any of them is unknown (no RPC, or a read failed). */
  readonly usdc_balance: string | null;
  /** The owners' in-flight reservations summed; null when Redis did not answer. */
  readonly in_flight: string | null;
};

export type WalletsReport = {
  readonly network: Network;
  /**
   * `address` and `chains` are the first owner's (as before several owners existed); `owners` lists
   * every owner in configured order (the first is `owners[0]`), `totals` each chain across them.
   */
  readonly evm: {
    readonly address: string;
    readonly chains: EvmChainReport[];
    readonly owners: EvmOwnerReport[];
    readonly totals: EvmChainTotal[];
  } | null;
  readonly solana: {
    readonly address: string;
    /** Our USDC associated token account: where a Solana-source payment is drawn from. */
    readonly usdc_account: string;
    readonly rpc: boolean;
    readonly usdc_balance: string | null;
    readonly error: string | null;
  } | null;
  readonly redis: 'ok' | 'unavailable';
  /**
   * Where each family's public addresses came from (docs/keys.md): the
   * configuration (EVM_OWNER_ADDRESSES, SOLANA_ADDRESS, the keystores' address fields), what the
   * running workers published to Redis, or nowhere (null: that family is not shown).
   */
  readonly addresses_from: { readonly evm: AddressOrigin; readonly solana: AddressOrigin };
};

class SolanaRpcError extends UsdcBatchError {
  override name = 'SolanaRpcError';
}

export const DEFAULT_WALLET_RPC_TIMEOUT_MS = 3_000;

/**
 * The USDC balance (base units) of one SPL token account over Solana JSON-RPC
 * (`getTokenAccountBalance`). An account that does not exist holds nothing: 0. Messages carry the
 * URL's scheme, host and port only (RPC providers put API keys in the path, query or user part).
 */
export async function readSolanaTokenBalance(
  url: string,
  tokenAccount: string,
  options: { fetch?: typeof fetch; timeoutMs?: number } = {},
): Promise<bigint> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_WALLET_RPC_TIMEOUT_MS;
  const where = displayUrl(url);
  const fail = (message: string) =>
    new SolanaRpcError('USDC_SOLANA_RPC_FAILED', `Solana RPC ${where}: ${message}`);
  const body = await postJsonRpc(
    url,
    { method: 'getTokenAccountBalance', params: [tokenAccount, { commitment: 'confirmed' }] },
    { ...(options.fetch ? { fetch: options.fetch } : {}), timeoutMs, fail },
  );
  const b = body as {
    result?: { value?: { amount?: unknown; decimals?: unknown } };
    error?: { message?: unknown };
  };
  if (b.error !== undefined) {
    const message = typeof b.error?.message === 'string' ? b.error.message.slice(0, 200) : 'error';
    if (/could not find account|account not found/i.test(message)) return 0n;
    throw fail(`getTokenAccountBalance refused: ${message}`);
  }
  const amount = b.result?.value?.amount;
  if (typeof amount !== 'string' || !/^[0-9]{1,30}$/.test(amount)) throw fail('answer has no token amount');
  if (b.result?.value?.decimals !== undefined && b.result.value.decimals !== 6) {
    throw fail(`the account's token has ${String(b.result.value.decimals)} decimals, not USDC's 6`);
  }
  return BigInt(amount);
}

/**
 * What reading the treasury's wallets needs of the configuration (the treasury reads the same):
 * public addresses and RPC endpoints, never a key.
 */
export type WalletReadConfig = Pick<
  Config,
  'evmOwnerAddresses' | 'solanaAddress' | 'network' | 'evmRpcUrl' | 'solanaRpcUrl'
>;

type WalletsDeps = {
  readonly config: WalletReadConfig & Pick<Config, 'queuePrefix'>;
  /**
   * A connection for the nonce pool and the workers' published addresses; undefined (or one that
   * does not answer) shows no pool, and only the addresses the configuration names.
   */
  readonly redis?: Redis | undefined;
  /** The treasury's addresses, when the caller has them already. */
  readonly addresses?: TreasuryAddresses;
  readonly fetch?: typeof fetch;
  readonly timeoutMs?: number;
};

const withTimeout = async <T>(p: Promise<T>, ms: number): Promise<T> => {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
};

/** One owner on one chain: the chain's nonce and balance, the nonce pool and the in-flight reservations. */
async function readOwnerChain(
  chain: EvmChain,
  owner: string,
  reader: ReturnType<typeof createChainReader>,
  nonces: ReturnType<typeof createNonceManager> | undefined,
  reservations: OwnerBalances | undefined,
  timeoutMs: number,
): Promise<EvmChainReport> {
  const rpc = reader.hasRpc(chain);
  let nonce: bigint | undefined;
  let balance: bigint | undefined;
  let gas: { wei: bigint | undefined; price: bigint | undefined } = { wei: undefined, price: undefined };
  let error: string | null = null;
  const readRpc = async () => {
    if (!rpc) return;
    try {
      [nonce, balance, gas] = await Promise.all([
        reader.permitNonce(chain, owner),
        reader.usdcBalance(chain, owner),
        // Gas that cannot be read is shown unavailable; it never hides the USDC reads.
        readGas(reader, chain, owner).catch(() => ({ wei: undefined, price: undefined })),
      ]);
    } catch (err) {
      error = errorMessage(err);
    }
  };
  const [pool, pending] = await Promise.all([
    nonces ? withTimeout(nonces.state(chain, owner), timeoutMs).catch(() => undefined) : undefined,
    reservations
      ? withTimeout(reservations.pending(chain, owner), timeoutMs).catch(() => undefined)
      : undefined,
    readRpc(),
  ]);
  const reserved = pending && rpc ? await notYetMined(chain, pending, reader) : pending;
  return {
    chain,
    rpc,
    permit_nonce: nonce === undefined ? null : nonce.toString(),
    usdc_balance: balance === undefined ? null : formatUsdc(balance),
    native_gas: gas.wei === undefined ? null : formatNative(gas.wei),
    gas_needed: gas.price === undefined ? null : formatNative(gasNeeded(gas.price)),
    gas_low: gas.wei === undefined || gas.price === undefined ? null : gas.wei < gasNeeded(gas.price),
    error,
    nonce_pool: pool
      ? {
          next: pool.next.toString(),
          holder: pool.holder,
          held_nonce: pool.heldNonce === null ? null : pool.heldNonce.toString(),
          lease_until: pool.leaseUntil === null ? null : new Date(pool.leaseUntil).toISOString(),
        }
      : null,
    in_flight: reserved ? formatUsdc(reserved.reduce((sum, r) => sum + r.amount, 0n)) : null,
    in_flight_transfers: reserved ? reserved.length : null,
  };
}

/** The owner's native balance and the chain's gas price (wei). */
async function readGas(
  reader: ReturnType<typeof createChainReader>,
  chain: EvmChain,
  owner: string,
): Promise<{ wei: bigint | undefined; price: bigint | undefined }> {
  const [wei, price] = await Promise.all([reader.nativeBalance(chain, owner), reader.gasPrice(chain)]);
  return { wei, price };
}

/** Receipts looked up per (owner, chain) at most; entries beyond count as in flight. */
const RECEIPTS_READ = 50;

/**
 * The reservations whose payment the chain does not show mined. Workers drop the entries of landed
 * payments only when the owner's next transfer is chosen, so after a batch some entries whose
 * transaction was mined stay in the hash for a while: `wallets` asks the RPC for their receipts
 * (read only: it changes nothing in Redis) and leaves them out. An entry without a transaction hash
 * yet, or whose receipt cannot be read, counts as in flight.
 */
async function notYetMined(
  chain: EvmChain,
  entries: readonly Reserved[],
  reader: ReturnType<typeof createChainReader>,
): Promise<Reserved[]> {
  const mined = await minedBlocks(reader, chain, entries, RECEIPTS_READ);
  return entries.filter((e) => !mined.has(e.holder));
}

/** Each chain across the owners: balances and in-flight amounts summed, null where any is unknown. */
function chainTotals(owners: readonly EvmOwnerReport[]): EvmChainTotal[] {
  return EVM_CHAINS.map((chain) => {
    const rows = owners.map((o) => o.chains.find((c) => c.chain === chain) as EvmChainReport);
    const sum = (values: (string | null)[]): string | null => {
      let total = 0n;
      for (const v of values) {
        const parsed = v === null ? null : tryParseUsdc(v, { allowZero: true });
        if (!parsed?.ok) return null;
        total += parsed.value;
      }
      return formatUsdc(total);
    };
    return {
      chain,
      rpc: rows.some((r) => r.rpc),
      usdc_balance: sum(rows.map((r) => r.usdc_balance)),
      in_flight: sum(rows.map((r) => r.in_flight)),
    };
  });
}

/** Reads everything `wallets` shows, each source independently: one that fails is shown unavailable. */
export async function readWallets(deps: WalletsDeps): Promise<WalletsReport> {
  const { config } = deps;
  const timeoutMs = deps.timeoutMs ?? DEFAULT_WALLET_RPC_TIMEOUT_MS;
  let redisOk = false;
  if (deps.redis) {
    try {
      redisOk = (await withTimeout(deps.redis.ping(), timeoutMs)) === 'PONG';
    } catch {
      redisOk = false;
    }
  }

  const addresses =
    deps.addresses ??
    (await withTimeout(
      treasuryAddresses({ config, redis: redisOk ? deps.redis : undefined, prefix: config.queuePrefix }),
      timeoutMs,
    ).catch(() => treasuryAddresses({ config, prefix: config.queuePrefix })));

  let evm: WalletsReport['evm'] = null;
  if (addresses.evmOwners.length > 0) {
    const owners = addresses.evmOwners;
    const reader = createChainReader({
      config,
      timeoutMs,
      ...(deps.fetch ? { fetch: deps.fetch } : {}),
    });
    const nonces =
      redisOk && deps.redis
        ? createNonceManager({ redis: deps.redis, prefix: config.queuePrefix, chainReader: reader })
        : undefined;
    const reservations =
      redisOk && deps.redis
        ? createOwnerBalances({ redis: deps.redis, prefix: config.queuePrefix })
        : undefined;
    try {
      const reports = await Promise.all(
        owners.map(async (owner, i): Promise<EvmOwnerReport> => ({
          position: i + 1,
          address: owner,
          chains: await Promise.all(
            EVM_CHAINS.map((chain) => readOwnerChain(chain, owner, reader, nonces, reservations, timeoutMs)),
          ),
        })),
      );
      const first = reports[0] as EvmOwnerReport;
      evm = { address: first.address, chains: first.chains, owners: reports, totals: chainTotals(reports) };
    } finally {
      await nonces?.close();
    }
  }

  let solana: WalletsReport['solana'] = null;
  if (addresses.solana) {
    const { address, usdcAccount } = addresses.solana;
    let balance: bigint | undefined;
    let error: string | null = null;
    if (config.solanaRpcUrl) {
      try {
        balance = await readSolanaTokenBalance(config.solanaRpcUrl, usdcAccount, {
          timeoutMs,
          ...(deps.fetch ? { fetch: deps.fetch } : {}),
        });
      } catch (err) {
        error = errorMessage(err);
      }
    }
    solana = {
      address,
      usdc_account: usdcAccount,
      rpc: config.solanaRpcUrl !== undefined,
      usdc_balance: balance === undefined ? null : formatUsdc(balance),
      error,
    };
  }

  return {
    network: config.network,
    evm,
    solana,
    redis: redisOk ? 'ok' : 'unavailable',
    addresses_from: addresses.from,
  };
}
