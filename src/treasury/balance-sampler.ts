import type { Redis } from 'ioredis';
import { CHAINS, isEvmChain, type Chain } from '../domain/chains.ts';
import type { Logger } from '../log/logger.ts';
import { saveTreasuryBalances } from '../store/treasury-flows.ts';
import type { TreasuryAddresses, TreasuryConfig } from './balances.ts';
import { readEachChain } from './treasury-view.ts';

/**
 * A worker's timer (TREASURY_BALANCE_INTERVAL_MS, default 60 s) reading the treasury's balance on
 * every chain it has a key and an RPC for, into Redis, where `/metrics` reads it
 * (`usdc_batch_treasury_balance_usdc{chain}`). A chain that cannot be read keeps its last value.
 * It reads at the worker's own public addresses (its signers' addresses), never at a key.
 */
export type TreasurySampler = { stop(): void; readonly ready: Promise<void> };

function sampledChains(config: TreasuryConfig, addresses: TreasuryAddresses): Chain[] {
  return CHAINS.filter((c) =>
    isEvmChain(c)
      ? addresses.evmOwners.length > 0 && config.evmRpcUrl[c] !== undefined
      : addresses.solana !== null && config.solanaRpcUrl !== undefined,
  );
}

type SamplerDeps = {
  readonly redis: Redis;
  readonly prefix: string;
  readonly config: TreasuryConfig;
  /** The addresses of the worker's own keys. */
  readonly addresses: TreasuryAddresses;
  readonly logger?: Logger | undefined;
  readonly now?: () => number;
};

export async function sampleTreasuryBalances(deps: SamplerDeps): Promise<void> {
  const chains = sampledChains(deps.config, deps.addresses);
  if (chains.length === 0) return;
  const { read, errors } = await readEachChain(deps.config, deps.addresses, chains);
  for (const [chain, message] of errors)
    deps.logger?.debug({ chain, err: message }, 'treasury balance not read');
  await saveTreasuryBalances(deps.redis, deps.prefix, read, (deps.now ?? Date.now)());
}

export function startTreasurySampler(
  deps: SamplerDeps & { readonly config: TreasuryConfig & { readonly treasuryBalanceIntervalMs: number } },
): TreasurySampler {
  const every = deps.config.treasuryBalanceIntervalMs;
  const once = () =>
    sampleTreasuryBalances(deps).catch((err: unknown) =>
      deps.logger?.warn({ err: { message: (err as Error).message } }, 'treasury balances not sampled'),
    );
  if (every <= 0 || sampledChains(deps.config, deps.addresses).length === 0)
    return { stop() {}, ready: Promise.resolve() };
  const ready = once();
  const timer = setInterval(() => void once(), every);
  timer.unref();
  return {
    ready,
    stop() {
      clearInterval(timer);
    },
  };
}
