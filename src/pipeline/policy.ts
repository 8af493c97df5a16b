import { DEFAULT_HOLD_TIMES, type HoldTimes } from '../domain/hold-times.ts';

/**
 * Timings and bounds of one transfer's pipeline. Defaults keep the promise of docs/promises.md, promise 2: a
 * transfer whose calls keep failing transiently is final within 3 minutes.
 */
export type PipelinePolicy = {
  /** After this long since a transfer was first taken, transient failures make it final. */
  readonly transientDeadlineMs: number;
  /** Re-sends of an identical payload after ambiguous answers, before `needs_review`. */
  readonly maxAmbiguousResends: number;
  /** Sends of a payload that met `unavailable`, before `failed`. */
  readonly maxUnavailableSends: number;
  /** Fresh permits signed after the chain showed our nonce taken elsewhere. */
  readonly maxResigns: number;
  /** Fresh Solana transactions built after an unsent one expired. */
  readonly maxRebuilds: number;
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
  /**
   * How long a job waits for its (chain, owner) nonce lease before yielding its worker slot. Long:
   * a worker takes only the EVM jobs its owners can use (queue/transfer-workers.ts), so a job waits
   * here only behind a few others (more with several worker processes), woken by name when the lease
   * frees (signing/evm/nonce-wakeups.ts); a job that gave up would go round BullMQ and wait again.
   */
  readonly leaseWaitMs: number;
  /**
   * When a `needs_review` payload is first looked at again, this long after its deadline or
   * expiry. (An EVM permit is judged only from a block past its deadline, however long that takes.)
   */
  readonly settleMarginMs: number;
  /** How long a dead worker's holds outlive it (`WORKER_LOCK_MS`, domain/hold-times.ts). */
  readonly holds: HoldTimes;
  /**
   * How long a refused first send of a permit waits for the chain (`NONCE_SETTLE_WINDOW_MS`) before
   * the refusal is taken as final: an RPC may show an outside signer's use of our nonce seconds after
   * the service refused us.
   */
  readonly nonceSettleWindowMs: number;
};

export const DEFAULT_POLICY: PipelinePolicy = {
  transientDeadlineMs: 150_000,
  maxAmbiguousResends: 4,
  maxUnavailableSends: 8,
  maxResigns: 3,
  maxRebuilds: 2,
  backoffBaseMs: 250,
  backoffMaxMs: 15_000,
  leaseWaitMs: 30_000,
  settleMarginMs: 30_000,
  nonceSettleWindowMs: 20_000,
  holds: DEFAULT_HOLD_TIMES,
};

/** The pipeline's policy as wired (a worker's, from its configuration), or the defaults. */
export function policyOf(deps: { readonly policy?: PipelinePolicy | undefined }): PipelinePolicy {
  return deps.policy ?? DEFAULT_POLICY;
}

/** Exponential backoff with full jitter. */
export function backoffMs(
  policy: PipelinePolicy,
  attempt: number,
  random: () => number = Math.random,
): number {
  const cap = Math.min(policy.backoffMaxMs, policy.backoffBaseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(cap / 2 + (random() * cap) / 2);
}
