import { randomUUID } from 'node:crypto';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Chain } from '../domain/chains.ts';
import type { Logger } from '../log/logger.ts';
import type { TransferJobMetrics } from '../metrics/worker-metrics.ts';
import { abandonTransfer } from '../pipeline/abandon.ts';
import { policyOf } from '../pipeline/policy.ts';
import type { PipelineDeps } from '../pipeline/run-transfer.ts';
import { releaseTokenLock } from '../store/token-lock.ts';
import { unfinishedTransfers, type UnfinishedTransfer } from '../store/unfinished-transfers.ts';
import { readJobFates, type JobFate } from './job-hash.ts';
import { transferJobId, transferJobName } from './jobs.ts';
import { TRANSFER_JOB_OPTIONS } from './producer.ts';
import { settleGivenUpJob } from './transfer-processor.ts';

/** Re-queued this many times by the sweeper without finishing: its job keeps ending early; made final. */
export const MAX_SWEEP_REQUEUES = 3;
/**
 * A batch whose transfers are moving (its record changed within the quiet time) is read at most
 * this often: a 100,000-row batch in flight is a few hundred thousand Redis reads per sweep, and
 * its jobs are plainly being worked. A quiet batch is read at every sweep.
 */
export const BUSY_BATCH_SWEEP_MS = 10 * 60_000;
/** One process sweeps at a time (`P:sweep:lock`); a crashed sweeper's lock lapses after this. */
const SWEEP_LOCK_MS = 120_000;

export type SweepDeps = {
  readonly redis: Redis;
  readonly prefix: string;
  readonly pipeline: PipelineDeps;
  /** This worker's transfer queues, by source chain (a chain it does not serve is not its to sweep). */
  readonly queues: ReadonlyMap<Chain, Queue>;
  readonly logger: Logger;
  readonly metrics?: TransferJobMetrics | undefined;
  readonly now?: () => number;
  /** When this process last read each busy batch (kept by the caller across sweeps). */
  readonly busyReadAt?: Map<string, number>;
};

/**
 * Promise 2 from the store, not from the queue: every `queued` or `in_progress` transfer of an open,
 * unheld batch (unfinished-transfers.ts) whose job of its current round is not live —
 * - failed (the queue gave up on it: stalled too often, attempts exhausted): made final from its
 *   saved steps (`failed` when nothing can have moved, else `needs_review`), the job's hash
 *   updated to say so;
 * - missing (removed, never added after a crash of `retry` or `approve`): added again;
 * - completed without finishing the transfer: re-queued in a new round (its job id is taken until
 *   the old job is trimmed), at most MAX_SWEEP_REQUEUES times, then made final.
 * Waits keep their jobs (delayed), so a transfer waiting for the daily cap or a held nonce pool is
 * live. Returns how many transfers it acted on.
 */
export async function sweepUnfinished(deps: SweepDeps): Promise<number> {
  const lock = `${deps.prefix}:sweep:lock`;
  const token = randomUUID();
  if ((await deps.redis.set(lock, token, 'PX', SWEEP_LOCK_MS, 'NX')) !== 'OK') return 0;
  let n = 0;
  try {
    const now = (deps.now ?? Date.now)();
    const quietMs = sweepQuietMsOf(deps);
    const open = new Set<string>();
    const readBatch = (batchId: string, updatedAt: number) => {
      open.add(batchId);
      return readNow(deps.busyReadAt, batchId, now - updatedAt >= quietMs, now);
    };
    const options = { now, quietMs, readBatch };
    for await (const page of unfinishedTransfers(deps.redis, deps.prefix, options)) {
      const mine = page.filter((t) => deps.queues.has(t.from));
      const fates = await jobFates(deps, mine);
      for (const [i, t] of mine.entries()) {
        if (await act(deps, t, fates[i] ?? 'live')) n++;
      }
    }
    // Batches no longer open (complete, held) are not looked at again: forget their clocks. Only
    // after a whole sweep, so an open batch's clock is never lost (its next sight would restart it).
    for (const id of deps.busyReadAt?.keys() ?? []) if (!open.has(id)) deps.busyReadAt?.delete(id);
  } finally {
    await releaseTokenLock(deps.redis, lock, token).catch(() => {});
  }
  return n;
}

/**
 * A transfer untouched this long is looked at (domain/hold-times.ts, from `WORKER_LOCK_MS`: 60 s by
 * default): longer than any step between a command's state change and the job it adds (retry,
 * approve), and than a stalled job's way back (its lock, then BullMQ's stall check).
 */
export function sweepQuietMsOf(deps: Pick<SweepDeps, 'pipeline'>): number {
  return policyOf(deps.pipeline).holds.sweepQuietMs;
}

/**
 * A quiet batch is read at every sweep, a busy one at most every BUSY_BATCH_SWEEP_MS — and not at
 * its first sight by this process (a worker's start, or the batch's): that only starts its clock.
 * Promise 2 holds all the same: a transfer whose job was lost in a busy batch is found, later but
 * never not — the batch is read once its clock has run BUSY_BATCH_SWEEP_MS, or at the first sweep
 * after its record has been quiet the quiet time, whichever comes first; and a batch cannot stay
 * busy for ever, since it is busy only while its other transfers move (each of which ends final).
 * Reading it at first sight would only move that bound earlier for one sweep, at the price of every
 * unfinished transfer of every busy batch read at each worker's start.
 */
function readNow(
  busyReadAt: Map<string, number> | undefined,
  batchId: string,
  quiet: boolean,
  now: number,
): boolean {
  if (!busyReadAt || quiet) {
    busyReadAt?.delete(batchId);
    return true;
  }
  const last = busyReadAt.get(batchId);
  if (last === undefined) {
    busyReadAt.set(batchId, now);
    return false;
  }
  if (now - last < BUSY_BATCH_SWEEP_MS) return false;
  busyReadAt.set(batchId, now);
  return true;
}

/** What became of each transfer's job of its round (job-hash.ts: one or two pipelines for the page). */
async function jobFates(deps: SweepDeps, page: readonly UnfinishedTransfer[]): Promise<JobFate[]> {
  return await readJobFates(
    deps.redis,
    page.map((t) => ({
      queue: deps.queues.get(t.from) as Queue,
      jobId: transferJobId(t.batchId, t.id, t.round),
    })),
  );
}

async function act(deps: SweepDeps, t: UnfinishedTransfer, fate: JobFate): Promise<boolean> {
  const queue = deps.queues.get(t.from) as Queue;
  const jobId = transferJobId(t.batchId, t.id, t.round);
  if (fate === 'live') return false;
  if (fate === 'failed') {
    const job = await queue.getJob(jobId);
    if (!job) return false;
    return await settleGivenUpJob({ ...deps, source: t.from }, job);
  }
  const sweeps = await deps.pipeline.store.incr(t.batchId, t.id, 'swept');
  if (sweeps > MAX_SWEEP_REQUEUES) {
    const out = await abandonTransfer(deps.pipeline, await deps.pipeline.store.loadRun(t.batchId, t.id), {
      reason: `its job kept ending without finishing it (re-queued ${MAX_SWEEP_REQUEUES} times by the sweeper)`,
      jobRound: t.round,
    });
    if (out?.record) deps.metrics?.transferEnded(t.from, out.state, out.record.errorCode, null);
    return out !== undefined;
  }
  let round = t.round;
  if (fate === 'finished') {
    // The finished job keeps its id for a day: the transfer goes on in a round of its own.
    const res = await deps.pipeline.store.transition(t.batchId, t.id, {
      expected: [t.state],
      to: t.state,
      fields: { round: round + 1 },
    });
    if (!res.ok) return false;
    round++;
  }
  await queue.add(
    transferJobName(t),
    { batchId: t.batchId, transferId: t.id },
    { ...TRANSFER_JOB_OPTIONS, jobId: transferJobId(t.batchId, t.id, round) },
  );
  deps.logger.warn(
    { batchId: t.batchId, transferId: t.id, state: t.state, job: fate, round },
    'a transfer had no live job; the sweeper re-queued it',
  );
  return true;
}
