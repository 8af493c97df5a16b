import { collectDefaultMetrics, Registry, type Metric } from 'prom-client';
import { createBatchGauges, fillBatchGauges } from './batch-gauges.ts';
import { createControlGauges, fillControlGauges } from './control-gauges.ts';
import { createOwnerSeries, fillOwnerSeries } from './owner-series.ts';
import { readSnapshot, type SnapshotDeps } from './scrape-snapshot.ts';
import { registerTreasuryGauges } from './treasury-gauges.ts';
import { createWorkerSeries, fillWorkerSeries } from './worker-series.ts';

export { SCRAPED_BATCHES, SCRAPED_OWNER_PAIRS } from './scrape-snapshot.ts';

export type MetricsDeps = SnapshotDeps & {
  /** `MAX_DAILY_USDC` in micro-USDC, when set (`usdc_batch_daily_cap_micro_usdc`). */
  readonly dailyCap?: bigint | undefined;
};

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
  const batch = createBatchGauges();
  const worker = createWorkerSeries();
  const owner = createOwnerSeries();
  const control = createControlGauges();
  // Registered in the order of the exposition; the stored metrics are read by `name` and `get()`
  // only, so the casts stand for prom-client's Metric union.
  for (const m of [
    ...Object.values(batch),
    ...Object.values(worker),
    owner.ownerTransfers,
    owner.ownerLeaseWaits,
    control.workers,
    control.dailySpend,
    owner.ownerInFlight,
    control.dailyCap,
    control.listAge,
    control.listMaxAge,
  ])
    registry.registerMetric(m as unknown as Metric);
  registerTreasuryGauges(registry, deps);

  // Scrapes are serialized: one fills the gauges and renders before the next reads.
  let chain: Promise<unknown> = Promise.resolve();
  return {
    registry,
    contentType: registry.contentType,
    /** Reads Redis and renders the Prometheus text format. Rejects when Redis cannot be read. */
    render(): Promise<string> {
      const run = async () => {
        const snap = await readSnapshot(deps);
        fillBatchGauges(batch, snap);
        fillWorkerSeries(worker, snap);
        fillOwnerSeries(owner, snap);
        fillControlGauges(control, snap, deps.dailyCap);
        return await registry.metrics();
      };
      const next = chain.then(run, run);
      chain = next.catch(() => {});
      return next;
    },
  };
}
export type MetricsRegistry = ReturnType<typeof createMetricsRegistry>;
