import { CHAINS, EVM_CHAINS } from '../domain/chains.ts';
import type { Snapshot } from './scrape-snapshot.ts';
import { countersOf, histogramValues, StoredMetric } from './stored-metric.ts';
import {
  FAILURE_CODES,
  NONCE_SETTLE_BUCKETS_MS,
  SCREENING_CHECKS,
  SERVICE_CALL_BUCKETS_MS,
  TRANSFER_FINAL_BUCKETS_MS,
} from './worker-metrics.ts';

/** What the workers count and time (worker-metrics.ts): retries, service calls, nonces, outcomes, waits. */
export function createWorkerSeries() {
  return {
    retries: new StoredMetric(
      'counter',
      'usdc_batch_retries_total',
      'Retries, all workers: kind="call" a service call that failed transiently (retried, re-sent or handed back); kind="requeue" a transfer handed back to the queue (transient failure, 429, daily cap).',
    ),
    latency: new StoredMetric(
      'histogram',
      'usdc_batch_service_call_duration_seconds',
      'Transfer-service call latency by operation and outcome, all workers.',
    ),
    nonceRefusals: new StoredMetric(
      'counter',
      'usdc_batch_nonce_refusals_total',
      "Permits refused because the chain's nonce was not ours (an outside signer used it, or a presumed-used permit below blocked it), all workers.",
    ),
    nonceSettleWait: new StoredMetric(
      'histogram',
      'usdc_batch_nonce_settle_wait_seconds',
      'How long a refused permit waited for the chain before it was settled, by chain and outcome (moved, rewound, held, final, unknown), all workers.',
    ),
    failures: new StoredMetric(
      'counter',
      'usdc_batch_transfer_failures_total',
      `Transfers that ended failed, rejected or needs_review, by source chain, state and error code (${FAILURE_CODES.length} known codes, else "other"), all workers. Each is a failed job too.`,
    ),
    finalTime: new StoredMetric(
      'histogram',
      'usdc_batch_transfer_final_seconds',
      'Time from a transfer job being enqueued to its transfer becoming final, by source chain and final state, all workers (its _count is the throughput by chain and state).',
    ),
    waits: new StoredMetric(
      'counter',
      'usdc_batch_waits_total',
      'Transfer jobs handed back to the queue to wait, by source chain and reason (lock, paused, shutdown, no_key, nonce_lease, nonce_pool, nonce_chain, daily_cap, balance, retry, rate_limit, settle, replicas, screening), all workers.',
    ),
    screeningRefusals: new StoredMetric(
      'counter',
      'usdc_batch_screening_refusals_total',
      "Transfers refused before signing by screening, by check: list (a sanctions list), blacklist (the recipient blacklisted by USDC on its destination chain), owner_blacklist (no owner that may pay is clear of USDC's blacklist on the source chain), frozen (the Solana recipient's USDC account frozen), all workers.",
    ),
    intentsFailed: new StoredMetric(
      'counter',
      'usdc_batch_intents_failed_total',
      'Intents that ended failed after their transfer was submitted (the service took the USDC and did not deliver it), by source chain. Each is a failed job in the intents queue.',
    ),
  };
}
export type WorkerSeries = ReturnType<typeof createWorkerSeries>;

export function fillWorkerSeries(s: WorkerSeries, snap: Snapshot): void {
  s.retries.values = [
    { labels: { kind: 'call' }, value: Number(snap.counters['retry_call'] ?? 0) || 0 },
    { labels: { kind: 'requeue' }, value: Number(snap.counters['retry_requeue'] ?? 0) || 0 },
  ];
  s.latency.values = histogramValues(snap.serviceCalls, s.latency.name, SERVICE_CALL_BUCKETS_MS, [
    'operation',
    'outcome',
  ]);
  s.nonceRefusals.values = EVM_CHAINS.map((chain) => ({
    labels: { chain },
    value: Number(snap.counters[`nonce_refusals|${chain}`] ?? 0) || 0,
  }));
  s.nonceSettleWait.values = histogramValues(
    snap.nonceSettle,
    s.nonceSettleWait.name,
    NONCE_SETTLE_BUCKETS_MS,
    ['chain', 'outcome'],
  );
  s.finalTime.values = histogramValues(snap.transferFinal, s.finalTime.name, TRANSFER_FINAL_BUCKETS_MS, [
    'chain',
    'state',
  ]);
  s.failures.values = countersOf(snap.counters, 'failures', ['chain', 'state', 'code']);
  s.waits.values = countersOf(snap.counters, 'waits', ['chain', 'kind']);
  s.screeningRefusals.values = SCREENING_CHECKS.map((check) => ({
    labels: { check },
    value: Number(snap.counters[`screening_refusals|${check}`] ?? 0) || 0,
  }));
  s.intentsFailed.values = CHAINS.map((chain) => ({
    labels: { chain },
    value: Number(snap.counters[`intent_failed|${chain}`] ?? 0) || 0,
  }));
}
