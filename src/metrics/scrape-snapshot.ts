import { readScreening, type ScreeningState } from '../store/screening-state.ts';
import type { Redis } from 'ioredis';
import { type EvmChain } from '../domain/chains.ts';
import { TRANSFER_STATES } from '../domain/transfer.ts';
import type { QueueCounts } from './queue-counts.ts';
import { readBatches, type Batch } from '../store/batch-record.ts';
import { recentBatchIds } from '../store/batch-reader.ts';
import { createOwnerBalances } from '../store/owner-balance.ts';
import { readDailySpend } from '../store/spend-limit.ts';
import { workersAlive } from './worker-heartbeat.ts';
import { metricKeys } from './worker-metrics.ts';

/** Batches read per scrape: the most recent ones (a scrape stays one bounded Redis read). */
export const SCRAPED_BATCHES = 100;

/** (chain, owner) pairs a scrape reads reservations of, at most (owners × 4 chains; a bound, not a plan). */
export const SCRAPED_OWNER_PAIRS = 256;

export type SnapshotDeps = {
  readonly redis: Redis;
  readonly prefix: string;
  /** Job counts per queue (the queue layer's monitor). */
  readonly queueCounts: () => Promise<QueueCounts[]>;
  readonly now?: () => number;
};

/** Everything one scrape reports, read from Redis. */
export type Snapshot = {
  transfers: Map<string, number>;
  batches: Map<string, number>;
  amounts: Map<string, bigint>;
  queues: QueueCounts[];
  serviceCalls: Record<string, string>;
  counters: Record<string, string>;
  nonceSettle: Record<string, string>;
  transferFinal: Record<string, string>;
  workersAlive: number;
  dailySpend: bigint;
  /** Per `<CHAIN>|<owner>` known to the workers: micro-USDC reserved and not yet seen mined. */
  ownersInFlight: Map<string, bigint>;
  /** The sanctions lists the workers published (store/screening-state.ts); null: none did. */
  screening: ScreeningState | null;
  /** When the snapshot was read (ms). */
  at: number;
};

/**
 * One scrape's read: the `SCRAPED_BATCHES` most recent batch records and the workers' metric hashes
 * in one pipeline, with the queue counts, the live workers, the daily spend and the owners' reservations.
 */
export async function readSnapshot(deps: SnapshotDeps): Promise<Snapshot> {
  const mk = metricKeys(deps.prefix);
  const ids = await recentBatchIds(deps.redis, deps.prefix, SCRAPED_BATCHES);
  const pipe = deps.redis.pipeline();
  pipe.hgetall(mk.serviceCalls);
  pipe.hgetall(mk.counters);
  pipe.hgetall(mk.nonceSettle);
  pipe.hgetall(mk.transferFinal);
  const now = (deps.now ?? Date.now)();
  const [batches, res, queues, alive, spend, owners, screening] = await Promise.all([
    readBatches(deps.redis, deps.prefix, ids),
    pipe.exec(),
    deps.queueCounts(),
    workersAlive(deps.redis, deps.prefix, now),
    readDailySpend(deps.redis, deps.prefix, now),
    deps.redis.smembers(mk.owners),
    readScreening(deps.redis, deps.prefix),
  ]);
  const results = (res ?? []).map(([err, v]) => {
    if (err) throw err;
    return (v ?? {}) as Record<string, string>;
  });
  const transferFinal = results.pop() ?? {};
  const nonceSettle = results.pop() ?? {};
  const counters = results.pop() ?? {};
  const serviceCalls = results.pop() ?? {};
  return {
    ...batchTotals(batches),
    queues,
    serviceCalls,
    counters,
    nonceSettle,
    transferFinal,
    workersAlive: alive,
    dailySpend: spend,
    ownersInFlight: await readInFlight(deps, ownerPairs(owners, counters)),
    screening,
    at: now,
  };
}

/** Transfers by state, batches by status and the sums, over the batch records read. */
function batchTotals(
  records: readonly (Batch | null)[],
): Pick<Snapshot, 'transfers' | 'batches' | 'amounts'> {
  const totals = {
    transfers: new Map<string, number>(TRANSFER_STATES.map((s) => [s, 0])),
    batches: new Map([
      ['held', 0],
      ['open', 0],
      ['complete', 0],
    ]),
    amounts: new Map([
      ['amount', 0n],
      ['fee', 0n],
      ['net_receive', 0n],
    ]),
  };
  for (const b of records) {
    if (!b) continue;
    for (const s of TRANSFER_STATES) totals.transfers.set(s, (totals.transfers.get(s) ?? 0) + b.counts[s]);
    const status = b.held ? 'held' : b.complete ? 'complete' : 'open';
    totals.batches.set(status, (totals.batches.get(status) ?? 0) + 1);
    const sums: [string, bigint][] = [
      ['amount', b.amount],
      ['fee', b.fee],
      ['net_receive', b.netReceive],
    ];
    for (const [kind, v] of sums) totals.amounts.set(kind, (totals.amounts.get(kind) ?? 0n) + v);
  }
  return totals;
}

const OWNER_PAIR = /^(ETH|BASE|ARB|POLYGON)\|0x[0-9a-fA-F]{40}$/;

/**
 * The (chain, owner) pairs a scrape reports: those the workers registered (`P:metrics:owners`) and
 * those the owner counters name, well-formed only, sorted, at most SCRAPED_OWNER_PAIRS.
 */
function ownerPairs(registered: readonly string[], counters: Record<string, string>): string[] {
  const pairs = new Set(registered.filter((p) => OWNER_PAIR.test(p)));
  for (const field of Object.keys(counters)) {
    const m = /^owner_(?:paid|lease_waits)\|(.+)$/.exec(field);
    if (m && OWNER_PAIR.test(m[1] as string)) pairs.add(m[1] as string);
  }
  return [...pairs].sort().slice(0, SCRAPED_OWNER_PAIRS);
}

/**
 * Micro-USDC reserved per (chain, owner) and not yet seen mined: every pair the workers registered
 * or counted for, read in one round of HGETALLs (no scan of the keyspace; bounded).
 */
async function readInFlight(deps: SnapshotDeps, pairs: readonly string[]): Promise<Map<string, bigint>> {
  const reservations = createOwnerBalances({ redis: deps.redis, prefix: deps.prefix });
  const sums = await Promise.all(
    pairs.map(async (pair) => {
      const [chain, owner] = pair.split('|') as [EvmChain, string];
      const pending = await reservations.pending(chain, owner);
      return [pair, pending.reduce((sum, r) => sum + r.amount, 0n)] as const;
    }),
  );
  return new Map(sums);
}

/** Micro-USDC as a metric value: exact while below 2^53 (9 billion USDC). */
export const microValue = (v: bigint): number => Number(v);
