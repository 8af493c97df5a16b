import type { Redis } from 'ioredis';
import { CHAINS, isEvmChain, type Chain } from '../domain/chains.ts';
import { errorMessage } from '../domain/errors.ts';
import { formatUsdc } from '../domain/money.ts';
import { rebalanceSchedules, type RebalanceSchedule } from '../store/treasury-flows.ts';
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
 * What `GET /v1/treasury` and `/ui/treasury` show (docs/rebalancing.md): per chain the
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
    /** The schedule's cron (and time zone), its next firing (ISO; null when unknown). */
    readonly cron: string;
    readonly tz: string;
    readonly next_run: string | null;
    /** The last firing: its scheduled time (ISO), batch, status and error; null before the first. */
    readonly last_fired_at: string | null;
    readonly last_batch: string | null;
    readonly last_status: string | null;
    readonly last_error: string | null;
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
): Promise<{ schedule: RebalanceSchedule; policy: RebalancePolicy }[]> {
  return (await rebalanceSchedules(redis, prefix)).flatMap((s) => {
    const parsed = parsePolicy(s.policyText, s.policyFile);
    return parsed.ok ? [{ schedule: s, policy: parsed.policy }] : [];
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
  /** A schedule's next firing (ms) from its cron and time zone; null when it has none. */
  readonly nextRun?: (cron: string, tz: string) => number | null;
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
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  const policies = (await scheduledPolicies(deps.redis, deps.prefix)).map(({ schedule, policy }) => ({
    schedule: schedule.schedule,
    policy: policy.name,
    cron: schedule.cron,
    tz: schedule.tz,
    next_run: iso(deps.nextRun?.(schedule.cron, schedule.tz) ?? null),
    last_fired_at: iso(schedule.lastFiredAt),
    last_batch: schedule.lastBatch,
    last_status: schedule.lastStatus,
    last_error: schedule.lastError,
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
