import type { Redis } from 'ioredis';
import { CHAINS, EVM_CHAINS, isEvmChain, type Chain, type EvmChain } from '../domain/chains.ts';
import { errorMessage } from '../domain/errors.ts';
import type { Logger } from '../log/logger.ts';
import { createChainReader } from '../signing/evm/chain-reader.ts';
import { saveOwnerGas, type OwnerGasReading } from '../store/owner-gas.ts';
import { saveTreasuryBalances } from '../store/treasury-flows.ts';
import type { TreasuryAddresses, TreasuryConfig } from './balances.ts';
import { readEachChain } from './treasury-view.ts';

/**
 * A worker's timer (TREASURY_BALANCE_INTERVAL_MS, default 60 s) reading the treasury's balance on
 * every chain it has a key and an RPC for, into Redis, where `/metrics` reads it
 * (`usdc_batch_treasury_balance_usdc{chain}`). A chain that cannot be read keeps its last value.
 * It reads at the worker's own public addresses (its signers' addresses), never at a key. With them,
 * each EVM owner's native gas and the chain's gas price (`usdc_batch_owner_gas_native{chain,owner}`,
 * docs/cctp.md "Funding owners with gas").
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
  await sampleOwnerGas(deps, chains.filter(isEvmChain));
}

/** Each EVM owner's native balance and the chain's gas price, on every chain that can be read. */
async function sampleOwnerGas(deps: SamplerDeps, chains: readonly EvmChain[]): Promise<void> {
  const reader = createChainReader({ config: deps.config });
  const readings: OwnerGasReading[] = [];
  await Promise.all(
    EVM_CHAINS.filter((c) => chains.includes(c)).map(async (chain) => {
      try {
        const gasPrice = await reader.gasPrice(chain);
        for (const owner of deps.addresses.evmOwners) {
          const wei = await reader.nativeBalance(chain, owner);
          if (gasPrice !== undefined && wei !== undefined) readings.push({ chain, owner, wei, gasPrice });
        }
      } catch (err) {
        deps.logger?.debug({ chain, err: errorMessage(err) }, 'owner gas not read');
      }
    }),
  );
  await saveOwnerGas(deps.redis, deps.prefix, readings, (deps.now ?? Date.now)());
}

export function startTreasurySampler(
  deps: SamplerDeps & { readonly config: TreasuryConfig & { readonly treasuryBalanceIntervalMs: number } },
): TreasurySampler {
  const every = deps.config.treasuryBalanceIntervalMs;
  let stopped = false;
  // A sample still reading when the worker stops meets its connections closed: not a failure to report.
  const once = () =>
    sampleTreasuryBalances(deps).catch((err: unknown) => {
      if (!stopped)
        deps.logger?.warn({ err: { message: (err as Error).message } }, 'treasury balances not sampled');
    });
  if (every <= 0 || sampledChains(deps.config, deps.addresses).length === 0)
    return { stop() {}, ready: Promise.resolve() };
  const ready = once();
  const timer = setInterval(() => void once(), every);
  timer.unref();
  return {
    ready,
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}
