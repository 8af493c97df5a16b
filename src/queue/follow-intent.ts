import type { Redis } from 'ioredis';
import { DEFAULT_HOLD_TIMES } from '../domain/hold-times.ts';
import { addFollowedIntent } from '../store/intent-follows.ts';

/*
 * What it takes to start following an intent, and the follower's pace: light enough for the
 * producer (and so every CLI command that adds jobs) to import without the follower itself
 * (intent-follower.ts), which brings the CCTP road's chain calls.
 */

/**
 * How the follower paces itself (docs/data-model.md "Following intents"). The first poll waits
 * 15 s: an intent is rarely further than `pending` sooner, and polls during a batch compete with
 * payments for the service and the CPU. Then the wait grows with the intent's age, from 15 s to 60 s.
 */
export type FollowTiming = {
  /** From submit to the first poll. */
  readonly firstPollMs: number;
  /** From one poll to the next, by the intent's age (ms since submit). */
  readonly nextPollMs: (ageMs: number) => number;
  /** How often each worker process looks for due intents. */
  readonly tickMs: number;
  /** A claimed intent is skipped by other processes this long (and comes back after a crash). */
  readonly claimLeaseMs: number;
  /** An intent not final this long after submit is no longer followed (about 45 polls). */
  readonly giveUpAfterMs: number;
  /** A final status waits this long, at most `maxResultWaits` times, for its transfer job to end. */
  readonly resultWaitMs: number;
  readonly maxResultWaits: number;
};

export const FOLLOW_TIMING: FollowTiming = {
  firstPollMs: 15_000,
  nextPollMs: (age) => Math.min(60_000, Math.max(15_000, age)),
  tickMs: 1_000,
  claimLeaseMs: DEFAULT_HOLD_TIMES.followClaimMs,
  giveUpAfterMs: 45 * 60_000,
  resultWaitMs: 1_000,
  maxResultWaits: 20,
};

/**
 * Starts following an intent: the worker after a send, the producer after an operator's
 * `resolve --submitted`. A second call for the same submission changes nothing.
 */
export async function followIntent(
  redis: Redis,
  prefix: string,
  target: { batchId: string; transferId: string; intentId: string },
  firstPollMs: number = FOLLOW_TIMING.firstPollMs,
): Promise<void> {
  const now = Date.now();
  await addFollowedIntent(redis, prefix, { ...target, submittedAt: now }, now + firstPollMs);
}
