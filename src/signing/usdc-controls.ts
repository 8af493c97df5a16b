import type { Config } from '../config/config.ts';
import { isEvmChain, SOLANA_USDC_MINT, type Chain, type EvmChain } from '../domain/chains.ts';
import { createChainReader, DEFAULT_RPC_TIMEOUT_MS, type EvmChainReader } from './evm/chain-reader.ts';
import { usdcTokenAccount } from './solana/solana-signer.ts';
import { readTokenAccountState, type TokenAccountState } from './solana/token-account-state.ts';

/**
 * USDC's own controls as the chains show them (docs/promises.md, promise 6): FiatToken's
 * `isBlacklisted(address)` on an EVM chain, and whether a Solana wallet's USDC associated token
 * account is frozen. A reading serves for at most `maxAgeMs` (a minute); a read that fails throws
 * (a ChainReadError) and is never cached, so the caller waits and reads again — never skips.
 */
export type UsdcControls = {
  /** Whether the chain's controls can be read here: an RPC is configured for it. */
  screens(chain: Chain): boolean;
  /** `isBlacklisted(address)` of USDC on `chain`. */
  blacklisted(chain: EvmChain, address: string): Promise<boolean>;
  /** The wallet's USDC associated token account on Solana, and its state. */
  solanaAccount(wallet: string): Promise<{ readonly account: string; readonly state: TokenAccountState }>;
};

export type UsdcControlsDeps = {
  readonly config: Pick<Config, 'evmRpcUrl' | 'solanaRpcUrl' | 'network'>;
  /** The EVM reads (made from the configuration when absent). */
  readonly evm?: Pick<EvmChainReader, 'usdcBlacklisted'> | undefined;
  readonly fetch?: typeof fetch;
  readonly timeoutMs?: number;
  readonly now?: () => number;
  /** How long a reading serves; at most (and by default) a minute. */
  readonly maxAgeMs?: number;
};

export const USDC_CONTROLS_MAX_AGE_MS = 60_000;
/** Readings kept at most: a busy worker meets many recipients; the oldest go first. */
const MAX_READINGS = 50_000;

type Reading<T> = { readonly at: number; readonly value: Promise<T> };

/** One process's readings, by chain and address: a reading in flight is shared, a failed one dropped. */
function createReadings(now: () => number, maxAgeMs: number) {
  const readings = new Map<string, Reading<unknown>>();
  return async function read<T>(key: string, load: () => Promise<T>): Promise<T> {
    const hit = readings.get(key) as Reading<T> | undefined;
    if (hit && now() - hit.at < maxAgeMs) return await hit.value;
    const value = load();
    readings.delete(key);
    readings.set(key, { at: now(), value });
    if (readings.size > MAX_READINGS) readings.delete(readings.keys().next().value as string);
    value.catch(() => {
      if (readings.get(key)?.value === value) readings.delete(key);
    });
    return await value;
  };
}

export function createUsdcControls(deps: UsdcControlsDeps): UsdcControls {
  const { config } = deps;
  const timeoutMs = deps.timeoutMs ?? DEFAULT_RPC_TIMEOUT_MS;
  const evm =
    deps.evm ?? createChainReader({ config, timeoutMs, ...(deps.fetch ? { fetch: deps.fetch } : {}) });
  const read = createReadings(
    deps.now ?? Date.now,
    Math.min(deps.maxAgeMs ?? USDC_CONTROLS_MAX_AGE_MS, USDC_CONTROLS_MAX_AGE_MS),
  );
  const mint = SOLANA_USDC_MINT[config.network];
  return {
    screens: (chain) =>
      isEvmChain(chain) ? config.evmRpcUrl[chain] !== undefined : config.solanaRpcUrl !== undefined,
    blacklisted: (chain, address) =>
      read(`${chain}|${address.toLowerCase()}`, async () => {
        const v = await evm.usdcBlacklisted(chain, address);
        if (v === undefined) throw new Error(`no RPC is configured for ${chain} (EVM_RPC_URL_${chain})`);
        return v;
      }),
    solanaAccount: (wallet) =>
      read(`SOLANA|${wallet}`, async () => {
        const url = config.solanaRpcUrl;
        if (url === undefined) throw new Error('no RPC is configured for SOLANA (SOLANA_RPC_URL)');
        const account = await usdcTokenAccount(wallet, mint);
        const state = await readTokenAccountState(url, account, {
          timeoutMs,
          ...(deps.fetch ? { fetch: deps.fetch } : {}),
        });
        return { account, state };
      }),
  };
}
