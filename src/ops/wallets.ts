import type { Redis } from 'ioredis';
import { privateKeyToAccount } from 'viem/accounts';
import type { Hex } from 'viem';
import type { Config } from '../config/config.ts';
import { EVM_CHAINS, type EvmChain, type Network } from '../domain/chains.ts';
import { errorMessage, UsdcBatchError } from '../domain/errors.ts';
import { formatUsdc } from '../domain/money.ts';
import { createChainReader, redactUrl } from '../signing/evm/chain-reader.ts';
import { createNonceManager, type NonceState } from '../signing/evm/nonce-manager.ts';
import { createSolanaSigner } from '../signing/solana/solana-signer.ts';
import { postJsonRpc } from '../signing/json-rpc.ts';

/**
 * What `usdc-batch wallets` reports (PRODUCT.md §2): public addresses, and what the chains and
 * Redis say about them. Built only from public facts: no key, seed or RPC credential goes in.
 */
export type EvmChainReport = {
  readonly chain: EvmChain;
  /** Whether `EVM_RPC_URL_<CHAIN>` is configured. */
  readonly rpc: boolean;
  /** The chain's `nonces(owner)`; null without RPC or when the read failed. */
  readonly permit_nonce: string | null;
  /** `balanceOf(owner)`, decimal USDC; null without RPC or when the read failed. */
  readonly usdc_balance: string | null;
  /** Why a configured RPC gave no answer. */
  readonly error: string | null;
  /** The shared nonce pool in Redis; null when Redis did not answer. */
  readonly nonce_pool: {
    readonly next: string;
    readonly holder: string | null;
    readonly held_nonce: string | null;
    readonly lease_until: string | null;
  } | null;
};

export type WalletsReport = {
  readonly network: Network;
  readonly evm: { readonly address: string; readonly chains: EvmChainReport[] } | null;
  readonly solana: {
    readonly address: string;
    /** Our USDC associated token account: where a Solana-source payment is drawn from. */
    readonly usdc_account: string;
    readonly rpc: boolean;
    readonly usdc_balance: string | null;
    readonly error: string | null;
  } | null;
  readonly redis: 'ok' | 'unavailable';
};

export class SolanaRpcError extends UsdcBatchError {
  override name = 'SolanaRpcError';
}

export const DEFAULT_WALLET_RPC_TIMEOUT_MS = 3_000;

/**
 * The USDC balance (base units) of one SPL token account over Solana JSON-RPC
 * (`getTokenAccountBalance`). An account that does not exist holds nothing: 0. Messages carry the
 * URL only redacted (RPC providers put API keys in the path or query).
 */
export async function readSolanaTokenBalance(
  url: string,
  tokenAccount: string,
  options: { fetch?: typeof fetch; timeoutMs?: number } = {},
): Promise<bigint> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_WALLET_RPC_TIMEOUT_MS;
  const where = redactUrl(url);
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

export type WalletsDeps = {
  readonly config: Pick<
    Config,
    | 'evmPrivateKeys'
    | 'solanaSecretKey'
    | 'network'
    | 'evmRpcUrl'
    | 'solanaRpcUrl'
    | 'queuePrefix'
    | 'solanaAllowedDestinations'
  >;
  /** A connection for the nonce pool; undefined (or one that does not answer) shows no pool. */
  readonly redis?: Redis | undefined;
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

  let evm: WalletsReport['evm'] = null;
  const firstKey = config.evmPrivateKeys[0];
  if (firstKey) {
    const owner = privateKeyToAccount(firstKey.reveal() as Hex).address;
    const reader = createChainReader({
      config,
      timeoutMs,
      ...(deps.fetch ? { fetch: deps.fetch } : {}),
    });
    const nonces =
      redisOk && deps.redis
        ? createNonceManager({ redis: deps.redis, prefix: config.queuePrefix, chainReader: reader })
        : undefined;
    try {
      const chains = await Promise.all(
        EVM_CHAINS.map(async (chain): Promise<EvmChainReport> => {
          const rpc = reader.hasRpc(chain);
          let nonce: bigint | undefined;
          let balance: bigint | undefined;
          let error: string | null = null;
          if (rpc) {
            try {
              [nonce, balance] = await Promise.all([
                reader.permitNonce(chain, owner),
                reader.usdcBalance(chain, owner),
              ]);
            } catch (err) {
              error = errorMessage(err);
            }
          }
          let pool: NonceState | undefined;
          if (nonces) {
            try {
              pool = await withTimeout(nonces.state(chain, owner), timeoutMs);
            } catch {
              pool = undefined;
            }
          }
          return {
            chain,
            rpc,
            permit_nonce: nonce === undefined ? null : nonce.toString(),
            usdc_balance: balance === undefined ? null : formatUsdc(balance),
            error,
            nonce_pool: pool
              ? {
                  next: pool.next.toString(),
                  holder: pool.holder,
                  held_nonce: pool.heldNonce === null ? null : pool.heldNonce.toString(),
                  lease_until: pool.leaseUntil === null ? null : new Date(pool.leaseUntil).toISOString(),
                }
              : null,
          };
        }),
      );
      evm = { address: owner, chains };
    } finally {
      await nonces?.close();
    }
  }

  let solana: WalletsReport['solana'] = null;
  if (config.solanaSecretKey) {
    const signer = await createSolanaSigner({ config });
    let balance: bigint | undefined;
    let error: string | null = null;
    if (config.solanaRpcUrl) {
      try {
        balance = await readSolanaTokenBalance(config.solanaRpcUrl, signer.usdcAccount, {
          timeoutMs,
          ...(deps.fetch ? { fetch: deps.fetch } : {}),
        });
      } catch (err) {
        error = errorMessage(err);
      }
    }
    solana = {
      address: signer.address,
      usdc_account: signer.usdcAccount,
      rpc: config.solanaRpcUrl !== undefined,
      usdc_balance: balance === undefined ? null : formatUsdc(balance),
      error,
    };
  }

  return { network: config.network, evm, solana, redis: redisOk ? 'ok' : 'unavailable' };
}
