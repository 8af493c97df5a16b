import type { Redis } from 'ioredis';
import { collectDefaultMetrics, Gauge, Registry, type Metric } from 'prom-client';
import { TRANSFER_STATES } from '../domain/transfer.ts';
import type { QueueCounts } from '../queue/queue-monitor.ts';
import { keys } from '../store/keys.ts';
import { CHAINS, EVM_CHAINS, type EvmChain } from '../domain/chains.ts';
import { createOwnerBalances } from '../store/owner-balance.ts';
import { readDailySpend } from '../store/spend-limit.ts';
import { registerTreasuryGauges } from './treasury-gauges.ts';
import { ALIVE_WINDOW_MS, HEARTBEAT_MS, workersAlive } from './worker-heartbeat.ts';
import {
  FAILURE_CODES,
  metricKeys,
  NONCE_SETTLE_BUCKETS_MS,
  SERVICE_CALL_BUCKETS_MS,
  TRANSFER_FINAL_BUCKETS_MS,
} from './worker-metrics.ts';

/** Batches read per scrape: the most recent ones (a scrape stays one bounded Redis read). */
export const SCRAPED_BATCHES = 100;

/** (chain, owner) pairs a scrape reads reservations of, at most (owners × 4 chains; a bound, not a plan). */
export const SCRAPED_OWNER_PAIRS = 256;

export type MetricsDeps = {
  readonly redis: Redis;
  readonly prefix: string;
  /** Job counts per queue (the queue layer's monitor). */
  readonly queueCounts: () => Promise<QueueCounts[]>;
  /** `MAX_DAILY_USDC` in micro-USDC, when set (`usdc_batch_daily_cap_micro_usdc`). */
  readonly dailyCap?: bigint | undefined;
  readonly now?: () => number;
};

type Snapshot = {
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
};

type StoredValue = { labels: Record<string, string | number>; value: number; metricName?: string };

/**
 * A counter or histogram whose observations were made elsewhere (by worker processes, into Redis):
 * prom-client's own Counter and Histogram count only what this process observes, so this renders
 * the stored totals in the same exposition format (`_bucket{le}`, `_sum`, `_count` for a histogram).
 */
class StoredMetric {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'histogram';
  readonly aggregator = 'sum' as const;
  values: StoredValue[] = [];
  constructor(type: 'counter' | 'histogram', name: string, help: string) {
    this.type = type;
    this.name = name;
    this.help = help;
  }
  async get() {
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values: this.values,
    };
  }
  reset() {
    this.values = [];
  }
  collect() {}
}

/**
 * A histogram kept by workers as Redis hash fields `<label1>|<label2>|count`, `…|sum_ms` and one
 * per bucket `…|b<i>` (not cumulative): rendered as `_bucket{le}` (cumulative), `_sum`, `_count`.
 */
function histogramValues(
  raw: Record<string, string>,
  name: string,
  bucketsMs: readonly number[],
  labelNames: readonly [string, string],
): StoredValue[] {
  type Series = { count: number; sumMs: number; buckets: number[] };
  const series = new Map<string, Series>();
  for (const [field, value] of Object.entries(raw)) {
    const m = /^([A-Za-z_]+)\|([a-z_]+)\|(count|sum_ms|b([0-9]+))$/.exec(field);
    if (!m) continue;
    const key = `${m[1]}|${m[2]}`;
    const s = series.get(key) ?? {
      count: 0,
      sumMs: 0,
      buckets: new Array<number>(bucketsMs.length + 1).fill(0),
    };
    const n = Number(value) || 0;
    if (m[3] === 'count') s.count = n;
    else if (m[3] === 'sum_ms') s.sumMs = n;
    else if (Number(m[4]) < s.buckets.length) s.buckets[Number(m[4])] = n;
    series.set(key, s);
  }
  const out: StoredValue[] = [];
  for (const [key, s] of [...series].sort(([a], [b]) => a.localeCompare(b))) {
    const [first = '', second = ''] = key.split('|');
    const labels = { [labelNames[0]]: first, [labelNames[1]]: second };
    let cumulative = 0;
    bucketsMs.forEach((le, i) => {
      cumulative += s.buckets[i] ?? 0;
      out.push({ metricName: `${name}_bucket`, labels: { ...labels, le: le / 1000 }, value: cumulative });
    });
    out.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: s.count });
    out.push({ metricName: `${name}_sum`, labels, value: s.sumMs / 1000 });
    out.push({ metricName: `${name}_count`, labels, value: s.count });
  }
  return out;
}

/** Counter fields `<name>|<label1>|<label2>…` of the counters hash, as labelled values. */
function countersOf(raw: Record<string, string>, name: string, labelNames: readonly string[]): StoredValue[] {
  const out: StoredValue[] = [];
  for (const [field, value] of Object.entries(raw).sort(([a], [b]) => a.localeCompare(b))) {
    const parts = field.split('|');
    if (parts[0] !== name || parts.length !== labelNames.length + 1) continue;
    const labels: Record<string, string> = {};
    labelNames.forEach((l, i) => (labels[l] = parts[i + 1] ?? ''));
    out.push({ labels, value: Number(value) || 0 });
  }
  return out;
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

/** An owner counter for every known (chain, owner), 0 where nothing was counted yet. */
function ownerCounters(
  counters: Record<string, string>,
  name: string,
  pairs: readonly string[],
): StoredValue[] {
  return pairs.map((pair) => {
    const [chain = '', owner = ''] = pair.split('|');
    return { labels: { chain, owner }, value: Number(counters[`${name}|${pair}`] ?? 0) || 0 };
  });
}

/** Micro-USDC as a metric value: exact while below 2^53 (9 billion USDC). */
const microValue = (v: bigint): number => Number(v);

/**
 * The `/metrics` registry of `usdc-batch serve`. Every value is read from Redis at scrape time, so
 * any number of `serve` processes report the same numbers and none keeps state:
 * - transfers by state, batches by status, amounts and fees — from the batch records of the
 *   `SCRAPED_BATCHES` most recent batches (counters kept by the store, never a scan of transfers);
 * - queue jobs per queue and state, and queue depth (waiting + prioritized + delayed);
 * - the service-call latency histogram and the retries counter written by the workers
 *   (worker-metrics.ts);
 * - per treasury owner: transfers and lease waits (counted by the workers) and the balance
 *   reserved in flight (`P:reserve:<CHAIN>:<owner>`, for the owners the workers registered);
 * - prom-client's process and Node.js defaults (`process_*`, `nodejs_*`) of this `serve` process,
 *   registered on this registry only (so several apps in one process each have their own).
 */
export function createMetricsRegistry(deps: MetricsDeps) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const k = keys(deps.prefix);
  const mk = metricKeys(deps.prefix);

  const transfers = new Gauge({
    name: 'usdc_batch_transfers',
    help: `Transfers by state, over the ${SCRAPED_BATCHES} most recent batches.`,
    labelNames: ['state'],
    registers: [registry],
  });
  const batches = new Gauge({
    name: 'usdc_batch_batches',
    help: `The ${SCRAPED_BATCHES} most recent batches by status (held, open, complete).`,
    labelNames: ['status'],
    registers: [registry],
  });
  const amounts = new Gauge({
    name: 'usdc_batch_amount_micro_usdc',
    help: `Sums over the ${SCRAPED_BATCHES} most recent batches, micro-USDC: requested amount, estimated fee, net received.`,
    labelNames: ['kind'],
    registers: [registry],
  });
  const queueJobs = new Gauge({
    name: 'usdc_batch_queue_jobs',
    help: 'Jobs per queue and job state.',
    labelNames: ['queue', 'state'],
    registers: [registry],
  });
  const queueDepth = new Gauge({
    name: 'usdc_batch_queue_depth',
    help: 'Jobs still to run per queue (waiting + prioritized + delayed).',
    labelNames: ['queue'],
    registers: [registry],
  });
  const retries = new StoredMetric(
    'counter',
    'usdc_batch_retries_total',
    'Retries, all workers: kind="call" a service call that failed transiently (retried, re-sent or handed back); kind="requeue" a transfer handed back to the queue (transient failure, 429, daily cap).',
  );
  const latency = new StoredMetric(
    'histogram',
    'usdc_batch_service_call_duration_seconds',
    'Transfer-service call latency by operation and outcome, all workers.',
  );
  const nonceRefusals = new StoredMetric(
    'counter',
    'usdc_batch_nonce_refusals_total',
    "Permits refused because the chain's nonce was not ours (an outside signer used it, or a presumed-used permit below blocked it), all workers.",
  );
  const nonceSettleWait = new StoredMetric(
    'histogram',
    'usdc_batch_nonce_settle_wait_seconds',
    'How long a refused permit waited for the chain before it was settled, by chain and outcome (moved, rewound, held, final, unknown), all workers.',
  );
  const failures = new StoredMetric(
    'counter',
    'usdc_batch_transfer_failures_total',
    `Transfers that ended failed, rejected or needs_review, by source chain, state and error code (${FAILURE_CODES.length} known codes, else "other"), all workers. Each is a failed job too.`,
  );
  const finalTime = new StoredMetric(
    'histogram',
    'usdc_batch_transfer_final_seconds',
    'Time from a transfer job being enqueued to its transfer becoming final, by source chain and final state, all workers (its _count is the throughput by chain and state).',
  );
  const waits = new StoredMetric(
    'counter',
    'usdc_batch_waits_total',
    'Transfer jobs handed back to the queue to wait, by source chain and reason (lock, paused, shutdown, no_key, nonce_lease, nonce_pool, nonce_chain, daily_cap, balance, retry, rate_limit, settle), all workers.',
  );
  const ownerTransfers = new StoredMetric(
    'counter',
    'usdc_batch_owner_transfers_total',
    'Transfers the service accepted, by source chain and the treasury owner whose permit paid them, all workers.',
  );
  const ownerLeaseWaits = new StoredMetric(
    'counter',
    'usdc_batch_owner_lease_waits_total',
    "Times a transfer found a treasury owner's nonce lease taken on its source chain (it tried the next owner, or waited), by chain and owner, all workers.",
  );
  const intentsFailed = new StoredMetric(
    'counter',
    'usdc_batch_intents_failed_total',
    'Intents that ended failed after their transfer was submitted (the service took the USDC and did not deliver it), by source chain. Each is a failed job in the intents queue.',
  );
  // Registry only reads `name` and `get()`; the casts stand for prom-client's Metric union.
  for (const m of [
    retries,
    latency,
    nonceRefusals,
    nonceSettleWait,
    failures,
    finalTime,
    waits,
    intentsFailed,
    ownerTransfers,
    ownerLeaseWaits,
  ])
    registry.registerMetric(m as unknown as Metric);
  const workers = new Gauge({
    name: 'usdc_batch_workers',
    help: `Worker processes alive: their heartbeat (every ${HEARTBEAT_MS / 1000} s) was seen in the last ${ALIVE_WINDOW_MS / 1000} s.`,
    registers: [registry],
  });
  const dailySpend = new Gauge({
    name: 'usdc_batch_daily_spend_micro_usdc',
    help: 'Micro-USDC reserved or sent in the rolling 24 hours under MAX_DAILY_USDC (0 when no cap is set: nothing is reserved).',
    registers: [registry],
  });
  const ownerInFlight = new Gauge({
    name: 'usdc_batch_owner_in_flight_micro_usdc',
    help: "Micro-USDC of a treasury owner's balance reserved for transfers whose payment a worker has not yet seen mined (P:reserve), by source chain and owner. Reservations of payments that landed are dropped when the owner's next transfer is chosen, so the gauge can stay above 0 after a batch until then.",
    labelNames: ['chain', 'owner'],
    registers: [registry],
  });
  const dailyCap = new Gauge({
    name: 'usdc_batch_daily_cap_micro_usdc',
    help: 'MAX_DAILY_USDC in micro-USDC; -1 when no cap is set.',
    registers: [registry],
  });

  registerTreasuryGauges(registry, deps);

  async function snapshot(): Promise<Snapshot> {
    const ids = await deps.redis.zrevrange(k.batches, 0, SCRAPED_BATCHES - 1);
    const pipe = deps.redis.pipeline();
    for (const id of ids) pipe.hgetall(k.batch(id));
    pipe.hgetall(mk.serviceCalls);
    pipe.hgetall(mk.counters);
    pipe.hgetall(mk.nonceSettle);
    pipe.hgetall(mk.transferFinal);
    const now = (deps.now ?? Date.now)();
    const [res, queues, alive, spend, owners] = await Promise.all([
      pipe.exec(),
      deps.queueCounts(),
      workersAlive(deps.redis, deps.prefix, now),
      readDailySpend(deps.redis, deps.prefix, now),
      deps.redis.smembers(mk.owners),
    ]);
    const results = (res ?? []).map(([err, v]) => {
      if (err) throw err;
      return (v ?? {}) as Record<string, string>;
    });
    const transferFinal = results.pop() ?? {};
    const nonceSettle = results.pop() ?? {};
    const counters = results.pop() ?? {};
    const serviceCalls = results.pop() ?? {};
    const snap: Snapshot = {
      transfers: new Map(TRANSFER_STATES.map((s) => [s, 0])),
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
      queues,
      serviceCalls,
      counters,
      nonceSettle,
      transferFinal,
      workersAlive: alive,
      dailySpend: spend,
      ownersInFlight: await inFlight(ownerPairs(owners, counters)),
    };
    const int = (v: string | undefined): bigint => (v && /^-?[0-9]+$/.test(v) ? BigInt(v) : 0n);
    for (const b of results) {
      if (!b['id']) continue;
      for (const s of TRANSFER_STATES) {
        snap.transfers.set(s, (snap.transfers.get(s) ?? 0) + Math.max(0, Number(b[`n_${s}`] ?? 0)));
      }
      const status = b['held'] === '1' ? 'held' : b['complete'] === '1' ? 'complete' : 'open';
      snap.batches.set(status, (snap.batches.get(status) ?? 0) + 1);
      for (const kind of ['amount', 'fee', 'net_receive']) {
        snap.amounts.set(kind, (snap.amounts.get(kind) ?? 0n) + int(b[kind]));
      }
    }
    return snap;
  }

  /**
   * Micro-USDC reserved per (chain, owner) and not yet seen mined: every pair the workers registered
   * or counted for, read in one round of HGETALLs (no scan of the keyspace; bounded).
   */
  async function inFlight(pairs: readonly string[]): Promise<Map<string, bigint>> {
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

  function fill(snap: Snapshot): void {
    for (const [state, n] of snap.transfers) transfers.set({ state }, n);
    for (const [status, n] of snap.batches) batches.set({ status }, n);
    for (const [kind, v] of snap.amounts) amounts.set({ kind }, microValue(v));
    queueJobs.reset();
    queueDepth.reset();
    for (const { queue, counts } of snap.queues) {
      for (const [state, n] of Object.entries(counts)) queueJobs.set({ queue, state }, n);
      queueDepth.set({ queue }, counts.waiting + counts.prioritized + counts.delayed);
    }
    retries.values = [
      { labels: { kind: 'call' }, value: Number(snap.counters['retry_call'] ?? 0) || 0 },
      { labels: { kind: 'requeue' }, value: Number(snap.counters['retry_requeue'] ?? 0) || 0 },
    ];
    latency.values = histogramValues(snap.serviceCalls, latency.name, SERVICE_CALL_BUCKETS_MS, [
      'operation',
      'outcome',
    ]);
    nonceRefusals.values = EVM_CHAINS.map((chain) => ({
      labels: { chain },
      value: Number(snap.counters[`nonce_refusals|${chain}`] ?? 0) || 0,
    }));
    nonceSettleWait.values = histogramValues(
      snap.nonceSettle,
      nonceSettleWait.name,
      NONCE_SETTLE_BUCKETS_MS,
      ['chain', 'outcome'],
    );
    finalTime.values = histogramValues(snap.transferFinal, finalTime.name, TRANSFER_FINAL_BUCKETS_MS, [
      'chain',
      'state',
    ]);
    failures.values = countersOf(snap.counters, 'failures', ['chain', 'state', 'code']);
    waits.values = countersOf(snap.counters, 'waits', ['chain', 'kind']);
    intentsFailed.values = CHAINS.map((chain) => ({
      labels: { chain },
      value: Number(snap.counters[`intent_failed|${chain}`] ?? 0) || 0,
    }));
    // Every known (chain, owner) gets a series from its first scrape (0 until it counts something).
    const known = [...snap.ownersInFlight.keys()];
    ownerTransfers.values = ownerCounters(snap.counters, 'owner_paid', known);
    ownerLeaseWaits.values = ownerCounters(snap.counters, 'owner_lease_waits', known);
    ownerInFlight.reset();
    for (const [pair, micro] of snap.ownersInFlight) {
      const [chain = '', owner = ''] = pair.split('|');
      ownerInFlight.set({ chain, owner }, microValue(micro));
    }
    workers.set(snap.workersAlive);
    dailySpend.set(microValue(snap.dailySpend));
    dailyCap.set(deps.dailyCap === undefined ? -1 : microValue(deps.dailyCap));
  }

  // Scrapes are serialized: one fills the gauges and renders before the next reads.
  let chain: Promise<unknown> = Promise.resolve();
  return {
    registry,
    contentType: registry.contentType,
    /** Reads Redis and renders the Prometheus text format. Rejects when Redis cannot be read. */
    render(): Promise<string> {
      const run = async () => {
        fill(await snapshot());
        return await registry.metrics();
      };
      const next = chain.then(run, run);
      chain = next.catch(() => {});
      return next;
    },
  };
}
export type MetricsRegistry = ReturnType<typeof createMetricsRegistry>;
