import { DelayedError, Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { FINAL_INTENT_STATUSES } from '../domain/transfer.ts';
import type { Logger } from '../log/logger.ts';
import type { TransferJobMetrics } from '../metrics/worker-metrics.ts';
import type { ServiceClient } from '../service/types.ts';
import type { TransferStore } from '../store/transfer-store.ts';
import { dropUnhashedReservation } from '../store/owner-balance.ts';
import { savedSteps } from '../store/saved-steps.ts';
import type { TransferRecord } from '../store/transfer-record.ts';
import {
  finalFailure,
  jobKeyOf,
  syncIntentStatusInResult,
  writeJobResult,
  type ResultSync,
} from './job-outcome.ts';
import { JOB_LOG_LINES } from './job-reporter.ts';
import { queueNameFor, transferJobId } from './jobs.ts';
import { queueOptions } from './queue-options.ts';

export const INTENT_QUEUE = 'intents';
/** Polls per intent: with the delays below, about 45 minutes of following at most. */
const MAX_POLLS = 45;
/**
 * Times a final status waits (a second each) for the transfer job that submitted the intent to
 * end, so its result can say the final status too (a follower faster than the job's own end).
 */
const MAX_RESULT_WAITS = 20;
const RESULT_WAIT_MS = 1_000;

type FollowData = {
  batchId: string;
  transferId: string;
  intentId: string;
  polls: number;
  /** Waits spent for the transfer job to end (MAX_RESULT_WAITS). */
  resultWaits: number;
  /** The status the last poll saw (`null`: none yet, or the route failed). */
  seen: string | null;
};

/**
 * A follow job's result: the status it saw last (`null` when the status route does not know the
 * intent), and how it stopped following — `final` (complete or failed), `not_found` (404), or
 * `gave_up` after MAX_POLLS.
 */
export type FollowResult = {
  readonly batch_id: string;
  readonly transfer_id: string;
  readonly intent_id: string;
  readonly intent_status: string | null;
  readonly polls: number;
  readonly ended: 'final' | 'not_found' | 'gave_up';
};

function parse(data: unknown): FollowData | undefined {
  const d = data as Partial<FollowData> | null;
  if (
    !d ||
    typeof d.batchId !== 'string' ||
    typeof d.transferId !== 'string' ||
    typeof d.intentId !== 'string'
  ) {
    return undefined;
  }
  return {
    batchId: d.batchId,
    transferId: d.transferId,
    intentId: d.intentId,
    polls: Number(d.polls ?? 0),
    resultWaits: Number(d.resultWaits ?? 0),
    seen: typeof d.seen === 'string' ? d.seen : null,
  };
}

/**
 * Adds the job that follows one submitted intent (a job that exists is left as it is): the worker's
 * follower after a send, the producer after an operator's `resolve --submitted`.
 */
export async function addFollowJob(
  queue: Queue,
  target: { batchId: string; transferId: string; intentId: string },
  firstDelayMs: number = delayFor(0),
): Promise<void> {
  const data: FollowData = { ...target, polls: 0, resultWaits: 0, seen: null };
  await queue.add(`intent ${target.intentId}`, data, {
    jobId: `${target.batchId}/${target.transferId}/${target.intentId.replaceAll(':', '_')}`,
    delay: firstDelayMs,
    // Once the intent's status is in the transfer record (and its transfer job's result) the job
    // has nothing left to say: it goes. One that fails (the intent failed) stays a week.
    removeOnComplete: true,
    removeOnFail: { age: 7 * 24 * 3600 },
    keepLogs: JOB_LOG_LINES,
  });
}

// The first poll waits 15 s: an intent is rarely further than `pending` sooner, and polls during a
// batch compete with payments for the service and the CPU. Then 30 s, then every 60 s.
function delayFor(polls: number): number {
  return Math.min(60_000, 15_000 * 2 ** Math.min(polls, 5));
}

export const INTENT_QUEUE_DESCRIPTION =
  "Follows each submitted intent on the service's status route until complete or failed. A failed job is an intent that ended failed after its transfer was submitted: the service took the USDC and did not deliver it.";

type FollowerDeps = {
  redisUrl: string;
  prefix: string;
  service: ServiceClient;
  store: TransferStore;
  logger: Logger;
  /** The shared client: writes a failed job's result into its hash (absent: not written). */
  redis?: Redis;
  metrics?: TransferJobMetrics | undefined;
  concurrency?: number;
  /** Delay before poll `n` (0-based); tests shorten it. */
  delayFor?: (polls: number) => number;
};

/**
 * Follows submitted intents on the service's status route (`GET /sdk/v1/status/{id}`) until a final
 * status, recording it as `intent_status` (and the batch's settlement counters with it). A 404
 * stops the following of that intent and marks it untracked. Polling has its own queue so it never
 * takes a slot from a payment.
 */
export function createIntentFollower(deps: FollowerDeps) {
  const delay = deps.delayFor ?? delayFor;
  const connection = { url: deps.redisUrl, maxRetriesPerRequest: null };
  const queue = new Queue(INTENT_QUEUE, queueOptions(connection, deps.prefix));
  queue.on('error', (err) => deps.logger.warn({ err: { message: err.message } }, 'intent queue error'));

  const worker = new Worker(
    INTENT_QUEUE,
    (job: Job, token?: string) => followIntent(deps, delay, job, token),
    {
      connection,
      prefix: deps.prefix,
      concurrency: deps.concurrency ?? 8,
    },
  );
  worker.on('error', (err) => deps.logger.warn({ err: { message: err.message } }, 'intent worker error'));

  return {
    async follow(batchId: string, transferId: string, intentId: string): Promise<void> {
      await addFollowJob(queue, { batchId, transferId, intentId }, delay(0));
    },
    async close(): Promise<void> {
      await worker.close();
      await queue.close();
    },
  };
}
export type IntentFollower = ReturnType<typeof createIntentFollower>;

/**
 * One poll of one intent. A status that changed is logged when the job goes on (polls again, or
 * fails because the intent failed): a job that ends `complete` is removed at once, its log with it,
 * so nothing is written that nobody could read. The status seen last travels in the job's data.
 */
async function followIntent(
  deps: FollowerDeps,
  delay: (polls: number) => number,
  job: Job,
  token?: string,
): Promise<FollowResult> {
  const data = parse(job.data);
  if (!data) throw finalFailure('invalid: job data is not an intent to follow');
  const result = (intent_status: string | null, ended: FollowResult['ended']): FollowResult => ({
    batch_id: data.batchId,
    transfer_id: data.transferId,
    intent_id: data.intentId,
    intent_status,
    polls: data.polls + 1,
    ended,
  });
  const { seen } = data;
  let status: string | undefined;
  try {
    const res = await deps.service.getIntentStatus(data.intentId);
    if (res === undefined) {
      // The service has no status route (or no record) for it: its settlement can never be known
      // here, which the batch's `settled` says as null rather than waiting forever.
      await deps.store.saveIntentStatus(data.batchId, data.transferId, data.intentId, { untracked: true });
      await endReservation(deps, data, await deps.store.load(data.batchId, data.transferId));
      return result(seen, 'not_found');
    }
    status = res.status;
  } catch (err) {
    deps.logger.debug(
      { err: { message: (err as Error).message }, intentId: data.intentId },
      'status poll failed',
    );
  }
  if (status !== undefined) {
    const final = (FINAL_INTENT_STATUSES as readonly string[]).includes(status);
    if (status !== seen && (!final || status === 'failed')) {
      await job.log(
        `${new Date().toISOString()} poll ${data.polls + 1}: intent ${data.intentId} is ${status}`,
      );
    }
    const rec = await deps.store.load(data.batchId, data.transferId);
    if (final) await endReservation(deps, data, rec);
    const recorded = rec ? await recordStatus(deps, job, data, rec, status) : undefined;
    if (final && recorded?.sync === 'unfinished' && data.resultWaits < MAX_RESULT_WAITS) {
      // The transfer job that submitted it has not ended yet: come back when its result exists.
      await job.updateData({ ...data, resultWaits: data.resultWaits + 1, seen: status });
      await job.moveToDelayed(Date.now() + RESULT_WAIT_MS, token);
      throw new DelayedError();
    }
    if (status === 'failed' && recorded) throw intentFailure(data, recorded.record);
    if (final) return result(status, 'final');
  }
  if (data.polls + 1 >= MAX_POLLS) {
    await endReservation(deps, data, await deps.store.load(data.batchId, data.transferId));
    return result(status ?? seen, 'gave_up');
  }
  await job.updateData({ ...data, polls: data.polls + 1, seen: status ?? seen });
  await job.moveToDelayed(Date.now() + delay(data.polls + 1), token);
  throw new DelayedError();
}

/** The intent is settled (or will not be followed): an owner reservation with no tx hash ends. */
async function endReservation(
  deps: FollowerDeps,
  data: FollowData,
  rec: TransferRecord | undefined,
): Promise<void> {
  if (!deps.redis) return;
  if (rec && rec.intentId === data.intentId) await dropUnhashedReservation(deps.redis, deps.prefix, rec);
}

/**
 * Records the status on the transfer (while the intent is still its own), and in the result of the
 * transfer job that submitted it (transferJobKeys). An intent that ended `failed` after its
 * transfer was submitted — the service took the USDC and did not deliver it — is counted once.
 */
async function recordStatus(
  deps: FollowerDeps,
  job: Job,
  data: FollowData,
  rec: TransferRecord,
  status: string,
): Promise<{ readonly record: TransferRecord; readonly sync: ResultSync } | undefined> {
  // Recorded only while the transfer still names this intent (checked again in the same step).
  if (rec.intentId !== data.intentId) return undefined;
  if (!(await deps.store.saveIntentStatus(data.batchId, data.transferId, data.intentId, { status }))) {
    return undefined;
  }
  const sync = await syncTransferJobs(deps, rec, data, status);
  if (status === 'failed') {
    if (rec.intentStatus !== 'failed' && data.seen !== 'failed') deps.metrics?.intentFailed(rec.from);
    const outcome: FollowResult = {
      batch_id: data.batchId,
      transfer_id: data.transferId,
      intent_id: data.intentId,
      intent_status: status,
      polls: data.polls + 1,
      ended: 'final',
    };
    if (deps.redis) await writeJobResult(deps.redis, jobKeyOf(job), outcome);
  }
  return { record: rec, sync };
}

/** It fails the follow job, so it shows in bull-board's failed set and never as success. */
function intentFailure(data: FollowData, rec: TransferRecord): Error {
  return finalFailure(
    `intent_failed: intent ${data.intentId} of transfer ${data.batchId}/${data.transferId} (${rec.from}→${rec.to}, ${rec.recipient}) ended failed after it was submitted: the service took the USDC and did not deliver it; check the chain and the service`,
  );
}

/**
 * The job hashes that may hold the transfer's submitted result: its round's transfer job, and the
 * settle job of its payload (a needs_review transfer the chain or status route settled as paid).
 */
export function transferJobKeys(prefix: string, rec: TransferRecord): string[] {
  const queue = `${prefix}:${queueNameFor(rec.from)}`;
  const { round, payloadGen } = savedSteps(rec);
  const id = transferJobId(rec.batchId, rec.id, round);
  return [`${queue}:${id}`, `${queue}:${id}/settle${payloadGen ?? 0}`];
}

/** Carries the status into the transfer job's result; `unfinished` when that job has not ended. */
async function syncTransferJobs(
  deps: FollowerDeps,
  rec: TransferRecord,
  data: FollowData,
  status: string,
): Promise<ResultSync> {
  if (!deps.redis) return 'other';
  let unfinished = false;
  for (const key of transferJobKeys(deps.prefix, rec)) {
    const sync = await syncIntentStatusInResult(deps.redis, key, data, status);
    if (sync === 'updated') return 'updated';
    if (sync === 'unfinished') unfinished = true;
  }
  return unfinished ? 'unfinished' : 'other';
}
