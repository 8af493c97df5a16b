import { CHAINS } from '../../src/domain/chains.ts';
import { DEFAULTS } from '../../src/config/defaults.ts';
import { queueNameFor } from '../../src/queue/jobs.ts';
import { keys } from '../../src/store/keys.ts';
import { commandCalls, settledMemory, topCommands, totalCalls, withoutOwn } from '../lib/redis-info.ts';
import { mixedRows } from '../lib/rows.ts';
import {
  enqueueFile,
  productEnv,
  startBenchRedis,
  startWorkers,
  waitBatchComplete,
  writeCsv,
  type BenchRedis,
  type WorkerGroup,
} from '../lib/stack.ts';
import { waitIntentsFollowed } from './redis-footprint.ts';
import type { Context } from './throughput.ts';

/** One payroll batch of the retention run, per transfer. */
export type RetentionBatch = {
  readonly rows: number;
  /** Commands per transfer (INFO commandstats, Lua-internal calls included), by phase. */
  readonly commandsEnqueue: number;
  readonly commandsWork: number;
  readonly commandsFollow: number;
  readonly topWork: string;
  /** used_memory growth over this batch, once every transfer and intent is final, per transfer. */
  readonly bytesOnceFinal: number;
  /** Finished transfer jobs BullMQ holds once it is final (completed + failed, every transfer queue). */
  readonly jobsKept: number;
  readonly seconds: number;
  /** Transfers that did not end `submitted` (the bench's sandbox and machine are shared): state, code, message. */
  readonly notSubmitted: readonly string[];
};

/**
 * 9. Retention at the default TRANSFER_JOBS_KEPT: what a payroll holds in Redis once final, and what
 * it costs in commands, for a first batch on a fresh Redis (fixed costs included: the script cache,
 * the queues' metadata, the first 1,000 kept jobs per queue) and for a second batch after it (the
 * marginal cost, what each further row adds), with the figure for a 100,000-row payroll from them.
 */
export type RetentionResult = {
  readonly kept: string;
  readonly first: RetentionBatch;
  readonly second: RetentionBatch;
  /** used_memory of the first batch beyond its rows at the second batch's rate: fixed costs. */
  readonly fixedBytes: number;
  /** A 100,000-row payroll once final: the fixed costs plus 100,000 × the marginal bytes. */
  readonly payrollBytes: number;
};

export const PAYROLL_ROWS = 100_000;

export async function benchRetention(ctx: Context, p: { rows: number }): Promise<RetentionResult> {
  const redis = await startBenchRedis();
  let group: WorkerGroup | undefined;
  try {
    await ctx.sandbox.admin.reset();
    const prefix = 'usdc';
    // TRANSFER_JOBS_KEPT is left unset: its default is what is measured.
    const env = productEnv({
      redisUrl: redis.url,
      prefix,
      sandbox: ctx.sandbox,
      solanaKeyFile: ctx.solanaKeyFile,
      extra: { WORKER_CONCURRENCY: '64' },
    });
    const m0 = (await settledMemory(redis.client)).used;
    const run = { ctx, redis, env, prefix, rows: p.rows };
    const first = await oneBatch(run, 'a', () => (group = startWorkers(1, env)));
    const m1 = (await settledMemory(redis.client)).used;
    const second = await oneBatch(run, 'b', () => group as WorkerGroup);
    const m2 = (await settledMemory(redis.client)).used;
    const marginal = (m2 - m1) / p.rows;
    const fixedBytes = m1 - m0 - marginal * p.rows;
    const said = (b: RetentionBatch) =>
      `${(b.commandsEnqueue + b.commandsWork + b.commandsFollow).toFixed(1)} commands/transfer, ${b.bytesOnceFinal.toFixed(0)} B/transfer once final, ${b.jobsKept} jobs kept, ${b.seconds.toFixed(0)} s`;
    ctx.log(`retention first batch: ${said(first)}`);
    ctx.log(`retention second batch: ${said(second)}`);
    return {
      kept: DEFAULTS.TRANSFER_JOBS_KEPT,
      first,
      second,
      fixedBytes,
      payrollBytes: fixedBytes + PAYROLL_ROWS * marginal,
    };
  } finally {
    await group?.stop();
    await redis.stop();
  }
}

type Run = {
  readonly ctx: Context;
  readonly redis: BenchRedis;
  readonly env: Record<string, string>;
  readonly prefix: string;
  readonly rows: number;
};

/** Enqueue, work until complete, follow until every intent is final; `CONFIG RESETSTAT` before each. */
async function oneBatch(run: Run, tag: string, workers: () => WorkerGroup): Promise<RetentionBatch> {
  const { redis, prefix, rows: n } = run;
  const t0 = Date.now();
  const m0 = (await settledMemory(redis.client)).used;
  const file = writeCsv(run.ctx.dir, `retention-${tag}.csv`, mixedRows(n, `keep${tag}`));
  await redis.client.config('RESETSTAT');
  const { batchId } = await enqueueFile(file, run.env);
  const enqueueCalls = totalCalls(await commandCalls(redis.client));

  await redis.client.config('RESETSTAT');
  const polls = await waitBatchComplete(redis.client, prefix, batchId, workers(), 1_800_000);
  // The bench's own polls are not the product's commands.
  const workCalls = withoutOwn(await commandCalls(redis.client), 'hget', polls);

  await redis.client.config('RESETSTAT');
  const rounds = await waitIntentsFollowed(redis, prefix, 600_000);
  const followCalls = totalCalls(withoutOwn(await commandCalls(redis.client), 'zcard', rounds));
  const m1 = (await settledMemory(redis.client)).used;
  const notSubmitted = await transfersNotSubmitted(redis, prefix, batchId);
  // A few transfers that failed on a busy machine change neither figure; many would.
  if (notSubmitted.length > n / 100) {
    throw new Error(
      `retention: ${notSubmitted.length} of ${n} not submitted: ${notSubmitted.slice(0, 5).join('; ')}`,
    );
  }
  if (notSubmitted.length > 0) run.ctx.log(`retention ${tag}: not submitted: ${notSubmitted.join('; ')}`);
  return {
    rows: n,
    commandsEnqueue: enqueueCalls / n,
    commandsWork: totalCalls(workCalls) / n,
    commandsFollow: followCalls / n,
    topWork: topCommands(workCalls, n),
    bytesOnceFinal: (m1 - m0) / n,
    jobsKept: await jobsKept(redis, prefix),
    seconds: (Date.now() - t0) / 1000,
    notSubmitted,
  };
}

async function jobsKept(redis: BenchRedis, prefix: string): Promise<number> {
  let total = 0;
  for (const chain of CHAINS) {
    const q = `${prefix}:${queueNameFor(chain)}`;
    total += (await redis.client.zcard(`${q}:completed`)) + (await redis.client.zcard(`${q}:failed`));
  }
  return total;
}

const OTHER_FINAL_STATES = ['failed', 'rejected', 'needs_review', 'cancelled'] as const;

/** `<state> <id>: <code>: <message>` of each transfer of the batch that ended other than `submitted`. */
async function transfersNotSubmitted(redis: BenchRedis, prefix: string, batchId: string): Promise<string[]> {
  const out: string[] = [];
  for (const state of OTHER_FINAL_STATES) {
    for (const id of await redis.client.zrange(keys(prefix).batchState(batchId, state), 0, -1)) {
      const [code, message] = await redis.client.hmget(
        keys(prefix).transfer(batchId, id),
        'error_code',
        'error_message',
      );
      out.push(`${state} ${id}: ${code ?? '?'}: ${(message ?? '').slice(0, 300)}`);
    }
  }
  return out;
}
