import type { Redis } from 'ioredis';
import { CHAINS, isEvmChain, type Chain } from '../domain/chains.ts';
import type { Logger } from '../log/logger.ts';
import { saveTreasuryBalances } from '../store/treasury-flows.ts';
import { treasuryAddresses, type TreasuryConfig } from './balances.ts';
import { readEachChain } from './treasury-view.ts';

/**
 * A worker's timer (TREASURY_BALANCE_INTERVAL_MS, default 60 s) reading the treasury's balance on
 * every chain it has a key and an RPC for, into Redis, where `/metrics` reads it
 * (`usdc_batch_treasury_balance_usdc{chain}`). A chain that cannot be read keeps its last value.
 */
export type TreasurySampler = { stop(): void; readonly ready: Promise<void> };

function sampledChains(config: TreasuryConfig): Chain[] {
  return CHAINS.filter((c) =>
    isEvmChain(c)
      ? config.evmPrivateKeys.length > 0 && config.evmRpcUrl[c] !== undefined
      : config.solanaSecretKey !== undefined && config.solanaRpcUrl !== undefined,
  );
}

export async function sampleTreasuryBalances(deps: {
  readonly redis: Redis;
  readonly prefix: string;
  readonly config: TreasuryConfig;
  readonly logger?: Logger | undefined;
  readonly now?: () => number;
}): Promise<void> {
  const chains = sampledChains(deps.config);
  if (chains.length === 0) return;
  const addresses = await treasuryAddresses(deps.config);
  const { read, errors } = await readEachChain(deps.config, addresses, chains);
  for (const [chain, message] of errors)
    deps.logger?.debug({ chain, err: message }, 'treasury balance not read');
  await saveTreasuryBalances(deps.redis, deps.prefix, read, (deps.now ?? Date.now)());
}

export function startTreasurySampler(deps: {
  readonly redis: Redis;
  readonly prefix: string;
  readonly config: TreasuryConfig & { readonly treasuryBalanceIntervalMs: number };
  readonly logger?: Logger | undefined;
}): TreasurySampler {
  const every = deps.config.treasuryBalanceIntervalMs;
  const once = () =>
    sampleTreasuryBalances(deps).catch((err: unknown) =>
      deps.logger?.warn({ err: { message: (err as Error).message } }, 'treasury balances not sampled'),
    );
  if (every <= 0 || sampledChains(deps.config).length === 0) return { stop() {}, ready: Promise.resolve() };
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
