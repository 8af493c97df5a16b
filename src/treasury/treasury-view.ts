import type { Redis } from 'ioredis';
import { CHAINS, isEvmChain, type Chain } from '../domain/chains.ts';
import { errorMessage } from '../domain/errors.ts';
import { formatUsdc } from '../domain/money.ts';
import { rebalanceSchedules } from '../store/treasury-flows.ts';
import {
  BalanceReadError,
  readTreasuryBalances,
  treasuryAddresses,
  type BalanceOptions,
  type ChainBalance,
  type TreasuryAddresses,
  type TreasuryConfig,
} from './balances.ts';
import { chainState } from './planner.ts';
import { parsePolicy, type RebalancePolicy } from './policy.ts';
import { treasuryPositions, type TreasuryPosition } from './positions.ts';

/**
 * What `GET /v1/treasury` and `/ui/treasury` show (README "Treasury rebalancing"): per chain the
 * balance (and per owner), incoming, outgoing and position, and for each scheduled rebalancing
 * policy its min/target and each chain's state. Each chain is read on its own: one that cannot be
 * read is shown with its error, the others still are.
 */
export type TreasuryView = {
  readonly chains: {
    readonly chain: Chain;
    readonly balance: string | null;
    readonly owners: { readonly address: string; readonly balance: string }[];
    readonly incoming: string | null;
    readonly outgoing: string | null;
    readonly position: string | null;
    readonly error: string | null;
  }[];
  readonly policies: {
    readonly schedule: string;
    readonly policy: string;
    readonly chains: {
      readonly chain: Chain;
      readonly min: string | null;
      readonly target: string;
      readonly state: 'below_min' | 'ok' | 'spare' | null;
    }[];
  }[];
};

/** The chains the treasury has a key for (EVM chains with an EVM key, SOLANA with a Solana key). */
function treasuryChains(addresses: TreasuryAddresses): Chain[] {
  return CHAINS.filter((c) => (isEvmChain(c) ? addresses.evmOwners.length > 0 : addresses.solana !== null));
}

/** The scheduled policies, parsed (a stored policy that no longer parses is left out). */
export async function scheduledPolicies(
  redis: Redis,
  prefix: string,
): Promise<{ schedule: string; policy: RebalancePolicy }[]> {
  return (await rebalanceSchedules(redis, prefix)).flatMap((s) => {
    const parsed = parsePolicy(s.policyText, s.policyFile);
    return parsed.ok ? [{ schedule: s.schedule, policy: parsed.policy }] : [];
  });
}

/** Reads each chain's balance on its own: the readable ones, and the error of each other. */
export async function readEachChain(
  config: TreasuryConfig,
  addresses: TreasuryAddresses,
  chains: readonly Chain[],
  options: BalanceOptions = {},
): Promise<{ read: ChainBalance[]; errors: Map<Chain, string> }> {
  const results = await Promise.allSettled(
    chains.map((c) => readTreasuryBalances(config, addresses, [c], options)),
  );
  const read: ChainBalance[] = [];
  const errors = new Map<Chain, string>();
  results.forEach((r, i) => {
    if (r.status === 'fulfilled') read.push(...r.value);
    else
      errors.set(
        chains[i] as Chain,
        r.reason instanceof BalanceReadError
          ? (r.reason.failures[0]?.message ?? r.reason.shortMessage)
          : errorMessage(r.reason),
      );
  });
  return { read, errors };
}

export async function readTreasuryView(deps: {
  readonly redis: Redis;
  readonly prefix: string;
  readonly config: TreasuryConfig;
  readonly balances?: BalanceOptions;
}): Promise<TreasuryView> {
  const addresses = await treasuryAddresses({ config: deps.config, redis: deps.redis, prefix: deps.prefix });
  const { read, errors } = await readEachChain(
    deps.config,
    addresses,
    treasuryChains(addresses),
    deps.balances,
  );
  const positions = await treasuryPositions(
    { redis: deps.redis, prefix: deps.prefix, config: deps.config },
    addresses,
    read,
  );
  const byChain = new Map<Chain, TreasuryPosition>(positions.map((p) => [p.chain, p]));
  const amount = (v: bigint | undefined) => (v === undefined ? null : formatUsdc(v));
  const chains = CHAINS.filter((c) => byChain.has(c) || errors.has(c)).map((chain) => {
    const p = byChain.get(chain);
    return {
      chain,
      balance: amount(p?.balance),
      owners: (p?.owners ?? []).map((o) => ({ address: o.address, balance: formatUsdc(o.balance) })),
      incoming: amount(p?.incoming),
      outgoing: amount(p?.outgoing),
      position: amount(p?.position),
      error: errors.get(chain) ?? null,
    };
  });
  const policies = (await scheduledPolicies(deps.redis, deps.prefix)).map(({ schedule, policy }) => ({
    schedule,
    policy: policy.name,
    chains: policy.chains.map((t) => {
      const p = byChain.get(t.chain);
      return {
        chain: t.chain,
        min: t.min === null ? null : formatUsdc(t.min),
        target: formatUsdc(t.target),
        state: p === undefined ? null : chainState(t, p.position),
      };
    }),
  }));
  return { chains, policies };
}
