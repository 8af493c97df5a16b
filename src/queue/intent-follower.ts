import type { Redis } from 'ioredis';
import type { RedisEndpoint } from '../store/redis-endpoint.ts';
import { isFinalIntentStatus } from '../domain/transfer.ts';
import type { Logger } from '../log/logger.ts';
import type { TransferJobMetrics } from '../metrics/worker-metrics.ts';
import type { ServiceClient } from '../service/types.ts';
import {
  claimDueIntents,
  dropFollowedIntent,
  followsIntent,
  readFollowedTransfer,
  releaseClaims,
  scheduleNextPoll,
  type FollowedIntent,
  type FollowedTransfer,
} from '../store/intent-follows.ts';
import { dropUnhashedReservation } from '../store/owner-balance.ts';
import type { TransferStore } from '../store/transfer-store.ts';
import { FOLLOW_TIMING, followIntent, type FollowTiming } from './follow-intent.ts';
import { startFollowLoop } from './follow-loop.ts';
import { addFailedIntentJob, createIntentFailures, type IntentFailures } from './intent-failures.ts';
import { createIntentJobLog, type IntentJobLog } from './intent-job-log.ts';
import { transferJobId } from './jobs.ts';
import type { CctpStepSaid, TransferSpans } from './run-spans.ts';
import { lookAtCctpIntent, type CctpFollowDeps } from '../pipeline/cctp/cctp-follow.ts';

/** Intents claimed per round, and polled at once. */
const CLAIM_LIMIT = 32;
const POLL_CONCURRENCY = 8;

type FollowerDeps = {
  endpoint: RedisEndpoint;
  prefix: string;
  service: ServiceClient;
  store: TransferStore;
  logger: Logger;
  /** The shared client: the follow set, reservations and the transfer jobs' logs. */
  redis: Redis;
  metrics?: TransferJobMetrics | undefined;
  timing?: Partial<FollowTiming>;
  /** With tracing on: each poll is a `follow` span of its transfer's trace (run-spans.ts). */
  spans?: TransferSpans | undefined;
  /** The CCTP road's attestation and mint (pipeline/cctp/cctp-follow.ts); absent without an EVM key. */
  cctp?: Omit<CctpFollowDeps, 'store' | 'logger'> | undefined;
};

/**
 * A CCTP intent (`cctp:<srcDomain>:<burnTx>`, docs/cctp.md) is looked at often (Circle's Fast
 * attestations take seconds; every look is one request under the shared limit) and never given up:
 * the USDC is burned and will be minted. Unattested after an hour, it is logged at warn.
 */
export const CCTP_FOLLOW = {
  firstPollMs: 1_000,
  nextPollMs: (age: number) => Math.min(10_000, Math.max(1_000, Math.round(age / 20))),
  warnAfterMs: 60 * 60_000,
};
const isCctpIntent = (intentId: string) => intentId.startsWith('cctp:');

type Follower = {
  readonly deps: FollowerDeps;
  readonly timing: FollowTiming;
  readonly failures: IntentFailures;
  /** Where a final status is told to the transfer job that submitted the intent. */
  readonly jobLog: IntentJobLog;
  /**
   * Final statuses waiting for their transfer job to end (member → status, waits spent, last seen).
   * Another process may claim such an intent between two waits and end it: its entry here is then
   * forgotten after a while (forgetStaleWaits).
   */
  readonly waiting: Map<string, { status: string; waits: number; at: number }>;
};

/**
 * Follows submitted intents on the service's status route (`GET /sdk/v1/status/{id}`) until a final
 * status, recording it as `intent_status` (and the batch's settlement counters with it). A 404
 * stops the following of that intent and marks it untracked. Each worker process runs the loop;
 * the claim in the follow set keeps two of them from polling one intent at once.
 */
export function createIntentFollower(deps: FollowerDeps) {
  const timing = { ...FOLLOW_TIMING, ...deps.timing };
  const f: Follower = {
    deps,
    timing,
    failures: createIntentFailures(deps),
    jobLog: createIntentJobLog(deps.redis, deps.prefix),
    waiting: new Map(),
  };
  const loop = startFollowLoop<FollowedIntent>({
    tickMs: timing.tickMs,
    limit: CLAIM_LIMIT,
    concurrency: POLL_CONCURRENCY,
    claim: (now, limit) => {
      forgetStaleWaits(f, now);
      return claimDueIntents(deps.redis, deps.prefix, now, { leaseMs: timing.claimLeaseMs, limit });
    },
    handle: (intent) => {
      if (!deps.spans) return pollIntent(f, intent);
      // A CCTP intent's look is its attest and mint steps' spans; a service intent's poll a follow span.
      if (isCctpIntent(intent.intentId))
        return deps.spans.cctpLook(intent, (step, said) => pollIntent(f, intent, said, step));
      return deps.spans.follow(intent, (said) => pollIntent(f, intent, said));
    },
    release: (intents) => releaseClaims(deps.redis, deps.prefix, intents, Date.now()),
    onError: (err, intent) =>
      deps.logger.warn(
        { err: { message: (err as Error).message }, intentId: intent?.intentId },
        'intent follower error',
      ),
  });
  return {
    async follow(batchId: string, transferId: string, intentId: string): Promise<void> {
      const first = isCctpIntent(intentId) ? CCTP_FOLLOW.firstPollMs : timing.firstPollMs;
      await followIntent(deps.redis, deps.prefix, { batchId, transferId, intentId }, first);
    },
    /** Follows the intent unless a member of the follow set says it is followed already. */
    async followAgain(batchId: string, transferId: string, intentId: string): Promise<void> {
      if (await followsIntent(deps.redis, deps.prefix, { batchId, transferId, intentId })) return;
      deps.logger.warn(
        { batchId, transferId, intentId },
        'a submitted transfer whose intent was not followed (its run died before it was): followed now',
      );
      await this.follow(batchId, transferId, intentId);
    },
    async close(): Promise<void> {
      await loop.stop();
      await f.failures.close();
      await f.jobLog.close();
    },
  };
}
export type IntentFollower = ReturnType<typeof createIntentFollower>;

/** Drops waits not touched for ten times the longest wait: another process ended that intent. */
function forgetStaleWaits(f: Follower, now: number): void {
  const horizon = 10 * f.timing.resultWaitMs * f.timing.maxResultWaits;
  for (const [member, w] of f.waiting) if (now - w.at > horizon) f.waiting.delete(member);
}

/**
 * One claimed intent: poll it (unless a final status already seen waits for its job), then decide.
 * `said` hears the status the service gave (its span's, with tracing on).
 */
async function pollIntent(
  f: Follower,
  intent: FollowedIntent,
  said: (status: string) => void = () => {},
  step?: CctpStepSaid,
): Promise<void> {
  const { deps } = f;
  const waited = f.waiting.get(intent.member);
  if (waited) {
    const t = await followedTransfer(f, intent);
    if (t) return await logWhenJobEnded(f, intent, waited.status, t);
    // The transfer names another intent by now: nothing of it is this intent's to record.
    f.waiting.delete(intent.member);
    return await dropFollowedIntent(deps.redis, deps.prefix, intent);
  }
  if (isCctpIntent(intent.intentId)) return await lookAtCctp(f, intent, said, step);
  let status: string;
  try {
    const res = await deps.service.getIntentStatus(intent.intentId);
    if (res === undefined) return await notFound(f, intent);
    status = res.status;
    said(status);
  } catch (err) {
    deps.logger.debug(
      { err: { message: (err as Error).message }, intentId: intent.intentId },
      'status poll failed',
    );
    return await nextPoll(f, intent);
  }
  if (isFinalIntentStatus(status)) return await finalStatus(f, intent, status);
  const t = await followedTransfer(f, intent);
  // The transfer names another intent (or is gone): nothing of it is this intent's to record.
  if (!t) return await dropFollowedIntent(deps.redis, deps.prefix, intent);
  if (t.intentStatus !== status && !(await saveStatus(f, intent, { status })))
    return await dropFollowedIntent(deps.redis, deps.prefix, intent);
  await nextPoll(f, intent);
}

/** The intent's transfer (one HMGET) while it still records this intent; undefined otherwise. */
async function followedTransfer(f: Follower, intent: FollowedIntent): Promise<FollowedTransfer | undefined> {
  const t = await readFollowedTransfer(f.deps.redis, f.deps.prefix, intent);
  return t?.intentId === intent.intentId ? t : undefined;
}

/**
 * Records what the route said while the transfer still records this intent (one script, which
 * writes nothing when the record says it already): the transfer as it was before, or undefined.
 */
async function saveStatus(
  f: Follower,
  intent: FollowedIntent,
  said: { status: string } | { untracked: true },
): Promise<FollowedTransfer | undefined> {
  return await f.deps.store.saveIntentStatus(intent.batchId, intent.transferId, intent.intentId, said);
}

/**
 * The service has no status route (or no record) for it: its settlement can never be known here,
 * which the batch's `settled` says as null rather than waiting forever.
 */
async function notFound(f: Follower, intent: FollowedIntent): Promise<void> {
  await endReservation(f, await saveStatus(f, intent, { untracked: true }));
  await dropFollowedIntent(f.deps.redis, f.deps.prefix, intent);
}

/**
 * One look at a CCTP intent (attestation, then one step of the mint); `complete` once minted, as a
 * final status of the service's is. A worker without the CCTP road's parts leaves it to another.
 */
async function lookAtCctp(
  f: Follower,
  intent: FollowedIntent,
  said: (status: string) => void,
  step: CctpStepSaid = () => {},
): Promise<void> {
  const { deps } = f;
  if (!deps.cctp) return await nextPoll(f, intent);
  const at = { batchId: intent.batchId, transferId: intent.transferId, intentId: intent.intentId };
  const log = deps.logger.child({ batchId: intent.batchId, transferId: intent.transferId });
  const look = await lookAtCctpIntent(
    { ...deps.cctp, store: deps.store, logger: log },
    at,
    (name, message) => {
      log.debug({ step: name }, message);
      step(name, message);
    },
  );
  said(look);
  if (look === 'gone') return await dropFollowedIntent(deps.redis, deps.prefix, intent);
  if (look === 'complete') return await finalStatus(f, intent, 'complete');
  await nextPoll(f, intent);
}

/** A CCTP intent is looked at again soon, never given up; past an hour unminted, a warn each look. */
async function nextCctpPoll(f: Follower, intent: FollowedIntent, now: number): Promise<void> {
  const age = now - intent.submittedAt;
  if (age > CCTP_FOLLOW.warnAfterMs) {
    f.deps.logger.warn(
      { intentId: intent.intentId, ageMs: age },
      'CCTP burn not minted after an hour: the attestation is slow; still followed (never given up)',
    );
  }
  await scheduleNextPoll(f.deps.redis, f.deps.prefix, intent, now + CCTP_FOLLOW.nextPollMs(age));
}

/** Polls again later, or — about 45 minutes after submit — stops following it. */
async function nextPoll(f: Follower, intent: FollowedIntent): Promise<void> {
  const now = Date.now();
  if (isCctpIntent(intent.intentId)) return await nextCctpPoll(f, intent, now);
  const age = now - intent.submittedAt;
  if (age < f.timing.giveUpAfterMs) {
    return await scheduleNextPoll(f.deps.redis, f.deps.prefix, intent, now + f.timing.nextPollMs(age));
  }
  f.deps.logger.warn(
    { intentId: intent.intentId, ageMs: age },
    'intent not final after 45 minutes: no longer followed',
  );
  await endReservation(f, await followedTransfer(f, intent));
  await dropFollowedIntent(f.deps.redis, f.deps.prefix, intent);
}

/**
 * A final status seen: the record says it (and the batch's counters move, in one script that also
 * returns the transfer as it was), the owner reservation ends, and the transfer job's log gets a
 * line for it (logWhenJobEnded). An intent that ended `failed` after its transfer was submitted —
 * the service took the USDC and did not deliver it — is counted once: when its record first says it.
 * Recording first and ending the reservation after it holds a reservation a moment longer, never
 * shorter; a crash between the two comes back here with the intent's next claim, and ends it then.
 */
async function finalStatus(f: Follower, intent: FollowedIntent, status: string): Promise<void> {
  const { deps } = f;
  const before = await saveStatus(f, intent, { status });
  // The transfer names another intent (or is gone): nothing of it is this intent's to record.
  if (!before) return await dropFollowedIntent(deps.redis, deps.prefix, intent);
  await endReservation(f, before);
  if (status === 'failed' && before.intentStatus !== 'failed') {
    deps.metrics?.intentFailed(before.from);
    deps.logger.warn(
      { batchId: intent.batchId, transferId: intent.transferId, intentId: intent.intentId },
      `intent ${intent.intentId} is failed`,
    );
  }
  await logWhenJobEnded(f, intent, status, before);
}

/**
 * The final status, recorded, goes to the transfer job's log as one more line; a job not yet ended
 * is waited for (a claim again after `resultWaitMs`, at most `maxResultWaits` times). Then an
 * intent that failed gets its failed job, and it is no longer followed.
 */
async function logWhenJobEnded(
  f: Follower,
  intent: FollowedIntent,
  status: string,
  t: FollowedTransfer,
): Promise<void> {
  const { deps } = f;
  const line = await f.jobLog.add(t.from, transferJobIds(t), intent, status);
  const waits = f.waiting.get(intent.member)?.waits ?? 0;
  if (line === 'unfinished' && waits < f.timing.maxResultWaits) {
    // The transfer job that submitted it has not ended yet: come back when its result exists.
    f.waiting.set(intent.member, { status, waits: waits + 1, at: Date.now() });
    return await scheduleNextPoll(deps.redis, deps.prefix, intent, Date.now() + f.timing.resultWaitMs);
  }
  f.waiting.delete(intent.member);
  if (status === 'failed') {
    await addFailedIntentJob(f.failures.queue, intent, Date.now() - intent.submittedAt);
  }
  await dropFollowedIntent(deps.redis, deps.prefix, intent);
}

/** The intent is settled (or will not be followed): an owner reservation with no tx hash ends. */
async function endReservation(f: Follower, t: FollowedTransfer | undefined): Promise<void> {
  if (!t?.owner) return;
  // The reservation is keyed by the owner the record names; a record naming its tx hash needs no
  // look (owner-balance.ts dropUnhashedReservation).
  const raw = t.txHash ? { owner: t.owner, tx_hash: t.txHash } : { owner: t.owner };
  const rec = { batchId: t.batchId, id: t.id, from: t.from, raw };
  await dropUnhashedReservation(f.deps.redis, f.deps.prefix, rec);
}

/**
 * The jobs that may hold the transfer's submitted result: its round's transfer job, and the settle
 * job of its payload (a needs_review transfer the chain or status route settled as paid).
 */
export function transferJobIds(
  t: Pick<FollowedTransfer, 'batchId' | 'id' | 'round' | 'payloadGen'>,
): string[] {
  const id = transferJobId(t.batchId, t.id, t.round);
  return [id, `${id}/settle${t.payloadGen ?? 0}`];
}
