/**
 * How long the holds a worker takes outlive it, all derived from one setting, `WORKER_LOCK_MS`
 * (docs/configuration.md; docs/operating.md "When a worker dies"). A live worker renews each hold
 * long before it lapses; only a dead one (kill -9, OOM, a lost machine) lets them lapse, and the
 * transfers it held are taken over by another worker about this long after its death: the
 * transfer's job and processing lock after one lock time, its owner's permit nonces after two, its
 * owner's CCTP burns after four.
 */
export type HoldTimes = {
  /** BullMQ's job lock (`lockDuration`), renewed by BullMQ every half of it while the job runs. */
  readonly jobLockMs: number;
  /** How often BullMQ looks for jobs whose lock lapsed (`stalledInterval`). */
  readonly stalledIntervalMs: number;
  /** A transfer's processing lock (one run at a time), and how often its run renews it. */
  readonly transferLockMs: number;
  readonly transferLockRenewMs: number;
  /** An owner's permit nonce lease (docs/nonces.md), and how often its holder's flow extends it. */
  readonly nonceLeaseMs: number;
  readonly nonceLeaseExtendMs: number;
  /** An owner's CCTP lease on a chain (docs/cctp.md "The flow"), renewed at every step of its burn. */
  readonly cctpLeaseMs: number;
  /** A followed intent's claim by one worker process (docs/data-model.md "Following intents"). */
  readonly followClaimMs: number;
  /**
   * The sweeper (docs/data-model.md "The sweeper"): a batch untouched this long has its unfinished
   * transfers' jobs looked at — longer than a stalled job's own way back (its lock, then a stall
   * check: one and a half lock times), so the sweeper acts only where BullMQ will not.
   */
  readonly sweepQuietMs: number;
  /** How often each worker process sweeps (one at a time across processes, `P:sweep:lock`). */
  readonly sweepEveryMs: number;
};

/** `WORKER_LOCK_MS`'s default: a dead worker's transfers are taken over within about a minute. */
export const DEFAULT_WORKER_LOCK_MS = 30_000;

/**
 * Every hold, from the one setting (30 s by default: 30 s, 60 s for a nonce lease, 120 s for CCTP;
 * the sweeper looks at a batch quiet for 60 s, every 30 s).
 */
export function holdTimesOf(workerLockMs: number): HoldTimes {
  return {
    jobLockMs: workerLockMs,
    stalledIntervalMs: Math.round(workerLockMs / 2),
    transferLockMs: workerLockMs,
    transferLockRenewMs: Math.round(workerLockMs / 3),
    nonceLeaseMs: 2 * workerLockMs,
    nonceLeaseExtendMs: Math.round(workerLockMs / 3),
    cctpLeaseMs: 4 * workerLockMs,
    followClaimMs: 2 * workerLockMs,
    sweepQuietMs: 2 * workerLockMs,
    sweepEveryMs: workerLockMs,
  };
}

export const DEFAULT_HOLD_TIMES: HoldTimes = holdTimesOf(DEFAULT_WORKER_LOCK_MS);

/**
 * Why a `WORKER_LOCK_MS` is too short, or undefined: the nonce lease (twice it) is extended between
 * a flow's steps, so it must outlast the longest step between two extensions — one service call
 * (its connect and response timeouts) after the extension interval — with 2 s to spare.
 */
export function workerLockProblem(
  workerLockMs: number,
  service: { readonly connectTimeoutMs: number; readonly responseTimeoutMs: number },
): string | undefined {
  const h = holdTimesOf(workerLockMs);
  const longestStep = service.connectTimeoutMs + service.responseTimeoutMs;
  const needed = h.nonceLeaseExtendMs + longestStep + 2_000;
  if (h.nonceLeaseMs >= needed) return undefined;
  return (
    `is too short for the service's timeouts: an owner's nonce lease (twice it, ${h.nonceLeaseMs} ms) ` +
    `must outlast one service call (SERVICE_CONNECT_TIMEOUT_MS + SERVICE_RESPONSE_TIMEOUT_MS = ` +
    `${longestStep} ms) after its ${h.nonceLeaseExtendMs} ms extension interval, with 2 s to spare`
  );
}
