import type { Redis } from 'ioredis';
import type { Logger } from '../log/logger.ts';
import { checksumEvmAddress } from '../domain/addresses.ts';
import type { Chain, EvmChain } from '../domain/chains.ts';
import type { TransferState } from '../domain/transfer.ts';
import type { NonceSettleOutcome, PipelineMetrics, WaitKind } from '../pipeline/pipeline-deps.ts';
import type { CallOutcome } from '../service/service-client.ts';
import type { Operation } from '../service/types.ts';
import type { TransferStore } from '../store/transfer-store.ts';

/**
 * Worker-side metrics, kept in Redis rather than in each worker's memory: workers run as many
 * processes on many machines with no HTTP port of their own (docs/http-api.md "Metrics": they have none), and
 * `usdc-batch serve` answers `/metrics` for all of them. Counters are Redis hashes incremented with
 * HINCRBY, so every worker adds to the same totals, and they survive restarts (Prometheus counters
 * only ever grow, as these do).
 *
 * - `<prefix>:metrics:service_calls` — per `<operation>|<outcome>`: `…|count`, `…|sum_ms`, and one
 *   field per latency bucket `…|b<i>` (not cumulative; the reader sums them into `le` buckets).
 * - `<prefix>:metrics:counters` — retries at two levels: `retry_call`, a service call that failed
 *   transiently (429, unavailable, ambiguous), which the worker then retries, re-sends the same
 *   payload for, or hands back to the queue; and `retry_requeue`, a transfer handed back to the
 *   queue to run again later (a transient failure before its payload, a 429, MAX_DAILY_USDC);
 *   and `nonce_refusals|<CHAIN>`, permits refused because the chain's nonce was not ours (an
 *   outside signer used it, or a presumed-used permit below blocked it).
 * - `<prefix>:metrics:nonce_settle` — how long refused permits waited for the chain, per
 *   `<CHAIN>|<outcome>` (moved, rewound, held, final, unknown), fields as for service calls.
 * - `<prefix>:metrics:transfer_final` — time from a job's enqueue to its transfer's final state,
 *   per `<CHAIN>|<state>` (source chain), fields as for service calls.
 * - in `…:counters` too: `failures|<CHAIN>|<state>|<code>` transfers that ended failed, rejected or
 *   needs_review (code one of FAILURE_CODES, else `other`); `waits|<CHAIN>|<kind>` jobs handed back
 *   to the queue by reason; `intent_failed|<CHAIN>` intents that ended `failed` after their transfer
 *   was submitted; per treasury owner (issue 17), `owner_paid|<CHAIN>|<owner>` transfers the service
 *   accepted with that owner's permit and `owner_lease_waits|<CHAIN>|<owner>` times a transfer found
 *   that owner's nonce lease taken (it tried another owner, or waited).
 * - `<prefix>:metrics:owners` — SET of `<CHAIN>|<owner>` (checksummed), added by each worker at
 *   start for the EVM source chains it serves and the owners it has keys for: `serve`, which may
 *   hold no key, reads each registered owner's `P:reserve:<CHAIN>:<owner>` hash at scrape time for
 *   `usdc_batch_owner_in_flight_micro_usdc`. Never pruned (a few bytes per owner and chain): an owner
 *   whose key was removed keeps its series, at 0 once nothing is reserved on it.
 */
export const SERVICE_CALL_BUCKETS_MS = [50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 20_000] as const;
/** Waits for the chain after a refused permit: an RPC's lag, up to the settle window and beyond. */
export const NONCE_SETTLE_BUCKETS_MS = [
  250, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 30_000, 60_000,
] as const;

/** Time to final: seconds for most, hours for a transfer that waited for the daily cap. */
export const TRANSFER_FINAL_BUCKETS_MS = [
  1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 180_000, 600_000, 1_800_000, 3_600_000, 21_600_000,
] as const;

/**
 * The error codes the pipeline and the operator commands record; any other code counts as `other`,
 * so the `code` label stays a bounded set whatever a future code or a stored record says.
 */
export const FAILURE_CODES = [
  'abandoned',
  'abandoned_uncertain',
  'build_refused',
  'cancelled',
  'estimate_refused',
  'expired_unused',
  'fee_too_high',
  'outcome_unknown',
  'owner_blacklisted',
  'policy_refused',
  'recipient_blacklisted',
  'recipient_frozen',
  'recipient_sanctioned',
  'refused',
  'resolved_not_sent',
  'service_unavailable',
  'unsupported_route',
] as const;

/** The `check` label of `usdc_batch_screening_refusals_total`, every value shown (0 until counted). */
export const SCREENING_CHECKS = ['list', 'blacklist', 'owner_blacklist', 'frozen'] as const;

export function failureCodeLabel(code: string | null): string {
  if (code === null) return 'none';
  return (FAILURE_CODES as readonly string[]).includes(code) ? code : 'other';
}

/** Counted by the queue layer (transfer-processor.ts, sweeper.ts, intent-follower.ts). */
export type TransferJobMetrics = {
  /**
   * A transfer made final by a job's run, the `failed` event or the sweeper: counted once; its time
   * from the job's enqueue when known.
   */
  transferEnded(chain: Chain, state: TransferState, code: string | null, msSinceEnqueue: number | null): void;
  /** A job handed back to the queue, by reason. */
  waited(chain: Chain, kind: WaitKind): void;
  /** An intent that ended `failed` after its transfer was submitted: the worst case an operator meets. */
  intentFailed(chain: Chain): void;
};

/** Outcomes of a settle that mean the refusal was about the nonce. */
const NONCE_REFUSAL: ReadonlySet<NonceSettleOutcome> = new Set(['moved', 'rewound', 'held']);

/** Outcomes of a service call that the worker retries in some form (never `rejected`). */
const TRANSIENT: ReadonlySet<CallOutcome> = new Set(['rate_limited', 'unavailable', 'ambiguous']);

export function metricKeys(prefix: string) {
  return {
    serviceCalls: `${prefix}:metrics:service_calls`,
    counters: `${prefix}:metrics:counters`,
    nonceSettle: `${prefix}:metrics:nonce_settle`,
    transferFinal: `${prefix}:metrics:transfer_final`,
    owners: `${prefix}:metrics:owners`,
  };
}

/** A (chain, owner) pair as the owners set and the counters name it. */
export const ownerField = (chain: EvmChain, owner: string): string => `${chain}|${checksumEvmAddress(owner)}`;

/**
 * Registers the (chain, owner) pairs a worker pays from, so that `/metrics` knows whose
 * reservations to read without holding a key or scanning the keyspace (see `owners` above).
 */
export async function registerOwners(
  redis: Redis,
  prefix: string,
  chains: readonly EvmChain[],
  owners: readonly string[],
): Promise<void> {
  const members = chains.flatMap((chain) => owners.map((owner) => ownerField(chain, owner)));
  if (members.length > 0) await redis.sadd(metricKeys(prefix).owners, ...members);
}

/** Index of the bucket a duration falls in; `buckets.length` is `+Inf`. */
export function bucketIndex(ms: number, buckets: readonly number[] = SERVICE_CALL_BUCKETS_MS): number {
  const i = buckets.findIndex((le) => ms <= le);
  return i === -1 ? buckets.length : i;
}

export type WorkerMetrics = {
  /** For `createServiceClient({ onCall })`: never throws, never waits. */
  onCall(operation: Operation, outcome: CallOutcome, ms: number): void;
  /** Counts transfers the pipeline hands back to the queue (in_progress → queued). */
  countRetries(store: TransferStore): TransferStore;
} & PipelineMetrics &
  TransferJobMetrics;

export function createWorkerMetrics(deps: {
  redis: Redis;
  prefix: string;
  logger?: Logger;
  /** How often buffered increments go to Redis; default 1 s. */
  flushMs?: number;
}): WorkerMetrics & { flush(): Promise<void>; close(): Promise<void> } {
  const k = metricKeys(deps.prefix);
  let lastWarn = 0;
  // A metric write must never slow or fail a payment: fire and forget, warn at most once a minute.
  const swallow = (err: unknown) => {
    if (Date.now() - lastWarn < 60_000) return;
    lastWarn = Date.now();
    deps.logger?.warn({ err: { message: (err as Error).message } }, 'could not record a metric');
  };
  // Increments are summed in memory and written once a second: three HINCRBY per service call
  // were ~8% of a busy worker's CPU (BENCHMARKS.md §2). A crash loses at most a second of counts.
  let pending = new Map<string, number>();
  const add = (key: string, field: string, by: number) => {
    const id = `${key}\u0000${field}`;
    pending.set(id, (pending.get(id) ?? 0) + by);
  };
  const flush = async () => {
    if (pending.size === 0) return;
    const batch = pending;
    pending = new Map();
    const pipe = deps.redis.pipeline();
    for (const [id, by] of batch) {
      const [key, field] = id.split('\u0000') as [string, string];
      pipe.hincrby(key, field, by);
    }
    await pipe.exec().catch(swallow);
  };
  const timer = setInterval(() => void flush(), deps.flushMs ?? 1_000);
  timer.unref();
  return {
    flush,
    async close() {
      clearInterval(timer);
      await flush();
    },
    onCall(operation, outcome, ms) {
      const field = `${operation}|${outcome}`;
      const whole = Math.max(0, Math.round(ms));
      add(k.serviceCalls, `${field}|count`, 1);
      add(k.serviceCalls, `${field}|sum_ms`, whole);
      add(k.serviceCalls, `${field}|b${bucketIndex(whole)}`, 1);
      if (TRANSIENT.has(outcome)) add(k.counters, 'retry_call', 1);
    },
    nonceSettled(chain, outcome, ms) {
      const field = `${chain}|${outcome}`;
      const whole = Math.max(0, Math.round(ms));
      add(k.nonceSettle, `${field}|count`, 1);
      add(k.nonceSettle, `${field}|sum_ms`, whole);
      add(k.nonceSettle, `${field}|b${bucketIndex(whole, NONCE_SETTLE_BUCKETS_MS)}`, 1);
      if (NONCE_REFUSAL.has(outcome)) add(k.counters, `nonce_refusals|${chain}`, 1);
    },
    screeningRefused(check) {
      add(k.counters, `screening_refusals|${check}`, 1);
    },
    transferEnded(chain, state, code, ms) {
      if (state !== 'submitted') add(k.counters, `failures|${chain}|${state}|${failureCodeLabel(code)}`, 1);
      if (ms === null) return;
      const field = `${chain}|${state}`;
      const whole = Math.max(0, Math.round(ms));
      add(k.transferFinal, `${field}|count`, 1);
      add(k.transferFinal, `${field}|sum_ms`, whole);
      add(k.transferFinal, `${field}|b${bucketIndex(whole, TRANSFER_FINAL_BUCKETS_MS)}`, 1);
    },
    waited(chain, kind) {
      add(k.counters, `waits|${chain}|${kind}`, 1);
    },
    intentFailed(chain) {
      add(k.counters, `intent_failed|${chain}`, 1);
    },
    ownerPaid(chain, owner) {
      add(k.counters, `owner_paid|${ownerField(chain, owner)}`, 1);
    },
    ownerLeaseWait(chain, owner) {
      add(k.counters, `owner_lease_waits|${ownerField(chain, owner)}`, 1);
    },
    countRetries(store) {
      return {
        ...store,
        async transition(batchId, transferId, change) {
          const res = await store.transition(batchId, transferId, change);
          if (res.ok && change.to === 'queued' && res.previous === 'in_progress') {
            add(k.counters, 'retry_requeue', 1);
          }
          return res;
        },
      };
    },
  };
}
