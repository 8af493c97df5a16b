import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { CHAINS } from '../../src/domain/chains.ts';
import { queueNameFor } from '../../src/queue/jobs.ts';
import { keys } from '../../src/store/keys.ts';
import { traceCommands, type CommandTrace } from '../lib/command-trace.ts';
import {
  commandCalls,
  matchedBytes,
  settledMemory,
  topCommands,
  totalCalls,
  withoutOwn,
  type SettledMemory,
} from '../lib/redis-info.ts';
import { mixedRows } from '../lib/rows.ts';
import {
  enqueueFile,
  productEnv,
  startBenchRedis,
  startWorkers,
  waitBatchComplete,
  writeCsv,
  type BenchRedis,
} from '../lib/stack.ts';
import type { Context } from './throughput.ts';

const INTENT_QUEUE = 'intents';

export type RedisRun = {
  readonly rows: number;
  /** Commands per transfer (INFO commandstats, Lua-internal calls included), by phase. */
  readonly commandsEnqueue: number;
  readonly commandsWork: number;
  readonly commandsFollow: number;
  readonly topWork: string;
  readonly topFollow: string;
  /**
   * used_memory growth per transfer, right after ingest and once all is final, with the server's
   * fixed costs apart (bench/lib/redis-info.ts settledMemory: no latency histograms; the Lua script
   * cache and the capped event streams taken out, and shown in `fixed`).
   */
  readonly bytesAfterEnqueue: number;
  readonly bytesAfterComplete: number;
  /** used_memory growth per transfer once final, after the finished transfer jobs' logs and results are deleted. */
  readonly bytesAfterCompleteNoLogs: number;
  /** The finished transfer jobs, per transfer, while kept (a day; failed ones a week). */
  readonly jobBytes: JobBytes;
  /**
   * Once all is final, in bytes (not per transfer): the Lua script cache's growth, the event streams,
   * and the latency histograms the settled reading emptied (since the reset before following).
   */
  readonly fixed: { readonly scripts: number; readonly eventStreams: number; readonly histograms: number };
  /** What stays per transfer for good: Σ MEMORY USAGE of records, payout ids and batch keys / rows. */
  readonly bytesRetained: number;
  /** The same from used_memory once the finished jobs are gone (fixed costs apart, as above). */
  readonly usedMemoryRetained: number;
  /** MEMORY USAGE (SAMPLES 0) summed over each kind of key once finished jobs are gone, per transfer. */
  readonly keyBytes: KeyBytes;
  /** What each kind of key holds once final, per transfer: the used_memory its deletion frees. */
  readonly freed: FreedBytes;
};

/**
 * used_memory freed per transfer by deleting each kind of key, once all is final (settled readings,
 * bench/lib/redis-info.ts): Redis's own cost of a key (its entry in the keyspace) included, which
 * MEMORY USAGE does not fully count.
 */
export type FreedBytes = {
  /** The finished transfer jobs' step logs and outcome objects (`returnvalue`). */
  readonly jobLogsAndResults: number;
  /** The rest of the finished jobs: their hashes and their places in the completed sets. */
  readonly jobRest: number;
  readonly records: number;
  readonly payouts: number;
  /** The batch record, its row and state sets. */
  readonly batch: number;
  /** The day's payment fingerprints (`P:fpd:*`, `P:fp:*`; they expire after the next day). */
  readonly fingerprints: number;
};

export type JobBytes = {
  /** Σ MEMORY USAGE of the transfer job hashes (results included) / rows. */
  readonly hashes: number;
  /** Σ HSTRLEN of their `returnvalue` (the outcome object) / rows. */
  readonly results: number;
  /** Σ MEMORY USAGE of their `:logs` lists / rows. */
  readonly logs: number;
  /** Log lines per transfer job. */
  readonly logLines: number;
};

export type KeyBytes = {
  /** `P:t:*`: the transfer records. */
  readonly records: number;
  /** `P:payout:*`: the payout ids. */
  readonly payouts: number;
  /** `P:batch:*` and `P:batches`: the batch record, its row and state sets. */
  readonly batch: number;
  /** BullMQ's `…:events` streams: capped at 10,000 entries per queue, so not per transfer in the long run. */
  readonly eventStreams: number;
  /** Everything else (queue metadata, nonce pools, counters). */
  readonly other: number;
};

/**
 * 4. What a batch costs Redis: commands per transfer (ingest, the worker until the batch is
 * complete, then the intent follower until every intent is final) and memory per transfer, both
 * with BullMQ's finished jobs still kept (the transfer workers keep them by TRANSFER_JOBS_KEPT) and after they are
 * removed — what stays for good is the transfer record, its place in the batch's sets and the
 * payout id.
 */
export type RedisFootprint = {
  readonly runs: readonly RedisRun[];
  /** The same batch on a Redis with `hash-max-listpack-value 1024` (records stay listpack-encoded). */
  readonly listpack: RedisRun;
  /**
   * Commands per transfer by what they touch (bench/lib/command-trace.ts), from one more run of the
   * same batch watched by MONITOR from enqueue until every intent is final.
   */
  readonly byKind: Readonly<Record<string, number>>;
};

/** Lets a transfer record's longest values (a permit's JSON, a signed transaction) stay in a listpack. */
export const LISTPACK_ARGS = ['--hash-max-listpack-value', '1024'] as const;

export async function benchRedisFootprint(
  ctx: Context,
  p: { rows: number; runs: number; traceFile?: string | undefined },
): Promise<RedisFootprint> {
  const out: RedisRun[] = [];
  const show = (what: string, r: RedisRun) =>
    ctx.log(
      `redis ${what}: ${(r.commandsEnqueue + r.commandsWork + r.commandsFollow).toFixed(0)} commands/transfer, retained ${r.bytesRetained.toFixed(0)} B/transfer (records ${r.keyBytes.records.toFixed(0)} B)`,
    );
  for (let i = 0; i < p.runs; i++) {
    const r = await oneRun(ctx, p.rows, i);
    out.push(r);
    show(`run ${i + 1}`, r);
    ctx.log(`redis run ${i + 1}: following ${r.commandsFollow.toFixed(1)} commands/transfer: ${r.topFollow}`);
  }
  const listpack = await oneRun(ctx, p.rows, p.runs, LISTPACK_ARGS);
  show('with hash-max-listpack-value 1024', listpack);
  const traced = await oneRun(ctx, p.rows, p.runs + 1, undefined, p.traceFile ?? true);
  const byKind = traced.byKind ?? {};
  const said = Object.entries(byKind).map(([k, v]) => `${k} ${v.toFixed(1)}`);
  ctx.log(`redis traced run: ${said.join('; ')}`);
  return { runs: out, listpack, byKind };
}

async function oneRun(
  ctx: Context,
  n: number,
  i: number,
  redisArgs?: readonly string[],
  /** true, or a file to write every command seen to (bench/lib/command-trace.ts). */
  trace: boolean | string = false,
): Promise<RedisRun & { byKind?: Record<string, number> }> {
  const redis = await startBenchRedis(redisArgs);
  let stopWorkers: (() => Promise<void>) | undefined;
  let tracer: CommandTrace | undefined;
  try {
    await ctx.sandbox.admin.reset();
    const prefix = 'usdc';
    const env = productEnv({
      redisUrl: redis.url,
      prefix,
      sandbox: ctx.sandbox,
      solanaKeyFile: ctx.solanaKeyFile,
      extra: { WORKER_CONCURRENCY: '64' },
    });
    const rows = mixedRows(n, `mem${i}`);
    const file = writeCsv(ctx.dir, `redis-${i}.csv`, rows);

    const m0 = await settledMemory(redis.client);
    /** Growth since m0 per transfer, the script cache and `streams` bytes of event streams apart. */
    const grown = (m: SettledMemory, streams: number) =>
      (m.used - m0.used - (m.scripts - m0.scripts) - streams) / n;
    if (trace)
      tracer = await traceCommands(redis.url, prefix, typeof trace === 'string' ? trace : undefined, [
        await clientAddress(redis.client),
      ]);
    const { batchId } = await enqueueFile(file, env);
    const enqueueCalls = totalCalls(await commandCalls(redis.client));
    const m1 = await settledMemory(redis.client);

    await redis.client.config('RESETSTAT');
    const group = startWorkers(1, env);
    stopWorkers = group.stop;
    const polls = await waitBatchComplete(redis.client, prefix, batchId, group, 600_000);
    // The bench's own polls (here and below) are not the product's commands.
    const workCalls = withoutOwn(await commandCalls(redis.client), 'hget', polls);

    await redis.client.config('RESETSTAT');
    const rounds = await waitIntentsFollowed(redis, prefix, 120_000);
    const followByCommand = withoutOwn(await commandCalls(redis.client), 'zcard', rounds);
    const followCalls = totalCalls(followByCommand);
    const traced = await tracer?.stop();
    tracer = undefined;
    await group.stop();
    const streams = await eventStreamBytes(redis, prefix);
    const m2 = await settledMemory(redis.client);
    // The finished jobs as kept, then without their step logs and results: what the logs and the
    // outcome objects cost while BullMQ keeps the jobs.
    const jb = await stripJobLogsAndResults(redis, prefix);
    const m2b = await settledMemory(redis.client);

    // A day later BullMQ has trimmed the finished jobs (removeOnComplete age); do it now.
    for (const name of [...CHAINS.map((c) => queueNameFor(c)), INTENT_QUEUE]) {
      const q = new Queue(name, { connection: { url: redis.url }, prefix, skipMetasUpdate: true });
      q.on('error', () => {});
      await q.clean(0, 0, 'completed');
      await q.close();
    }
    const m3 = await settledMemory(redis.client);
    const k = keys(prefix);
    const kb = await keyBytes(redis, prefix);
    const submitted = Number(await redis.client.hget(k.batch(batchId), 'n_submitted'));
    if (submitted !== n) throw new Error(`redis footprint: ${submitted} of ${n} transfers submitted`);
    const kinds = await freedByKind(redis, prefix);
    return {
      ...(traced ? { byKind: Object.fromEntries([...traced].map(([k, v]) => [k, v / n])) } : {}),
      rows: n,
      commandsEnqueue: enqueueCalls / n,
      commandsWork: totalCalls(workCalls) / n,
      commandsFollow: followCalls / n,
      topWork: topCommands(workCalls, n),
      topFollow: topCommands(followByCommand, n),
      bytesAfterEnqueue: grown(m1, 0),
      bytesAfterComplete: grown(m2, streams),
      bytesAfterCompleteNoLogs: grown(m2b, streams),
      fixed: { scripts: m2.scripts - m0.scripts, eventStreams: streams, histograms: m2.histograms },
      jobBytes: {
        hashes: jb.hashes / n,
        results: jb.results / n,
        logs: jb.logs / n,
        logLines: jb.logLines / n,
      },
      bytesRetained: (kb.records + kb.payouts + kb.batch) / n,
      // The capped event streams are a fixed cost, not a per-transfer one: left out here, shown apart.
      usedMemoryRetained: grown(m3, kb.eventStreams),
      keyBytes: {
        records: kb.records / n,
        payouts: kb.payouts / n,
        batch: kb.batch / n,
        eventStreams: kb.eventStreams / n,
        other: kb.other / n,
      },
      freed: {
        jobLogsAndResults: (m2.used - m2b.used) / n,
        jobRest: (m2b.used - m3.used) / n,
        records: kinds.records / n,
        payouts: kinds.payouts / n,
        batch: kinds.batch / n,
        fingerprints: kinds.fingerprints / n,
      },
    };
  } finally {
    await tracer?.stop();
    await stopWorkers?.();
    await redis.stop();
  }
}

/**
 * Sizes the finished transfer jobs (hash, `returnvalue`, `:logs`), then deletes their logs and
 * results, as a BullMQ without them would hold the same jobs.
 */
async function stripJobLogsAndResults(redis: BenchRedis, prefix: string): Promise<JobBytes> {
  const sums = { hashes: 0, results: 0, logs: 0, logLines: 0 };
  for (const chain of CHAINS) {
    const q = `${prefix}:${queueNameFor(chain)}`;
    for (const set of ['completed', 'failed']) {
      const ids = await redis.client.zrange(`${q}:${set}`, 0, -1);
      for (let i = 0; i < ids.length; i += 500) {
        const page = ids.slice(i, i + 500);
        const pipe = redis.client.pipeline();
        for (const id of page) {
          pipe.call('MEMORY', 'USAGE', `${q}:${id}`, 'SAMPLES', '0');
          pipe.hstrlen(`${q}:${id}`, 'returnvalue');
          pipe.call('MEMORY', 'USAGE', `${q}:${id}:logs`, 'SAMPLES', '0');
          pipe.llen(`${q}:${id}:logs`);
        }
        const res = (await pipe.exec()) ?? [];
        res.forEach(([, v], j) => {
          const key = (['hashes', 'results', 'logs', 'logLines'] as const)[j % 4] as keyof typeof sums;
          sums[key] += Number(v ?? 0);
        });
        const strip = redis.client.pipeline();
        for (const id of page) strip.del(`${q}:${id}:logs`).hdel(`${q}:${id}`, 'returnvalue');
        await strip.exec();
      }
    }
  }
  return sums;
}

async function keyBytes(redis: BenchRedis, prefix: string): Promise<KeyBytes> {
  const sums = { records: 0, payouts: 0, batch: 0, eventStreams: 0, other: 0 };
  let cursor = '0';
  do {
    const [next, found] = await redis.client.scan(cursor, 'COUNT', 1000);
    cursor = next;
    const pipe = redis.client.pipeline();
    for (const key of found) pipe.call('MEMORY', 'USAGE', key, 'SAMPLES', '0');
    const sizes = (await pipe.exec()) ?? [];
    found.forEach((key, i) => {
      const size = Number(sizes[i]?.[1] ?? 0);
      if (key.startsWith(`${prefix}:t:`)) sums.records += size;
      else if (key.startsWith(`${prefix}:payout:`)) sums.payouts += size;
      else if (key.startsWith(`${prefix}:batch`)) sums.batch += size;
      else if (key.endsWith(':events')) sums.eventStreams += size;
      else sums.other += size;
    });
  } while (cursor !== '0');
  return sums;
}

/** Deletes the records, payout ids, batch keys and fingerprints, a kind at a time: the bytes each frees. */
async function freedByKind(redis: BenchRedis, prefix: string) {
  const kinds = {
    records: (key: string) => key.startsWith(`${prefix}:t:`),
    payouts: (key: string) => key.startsWith(`${prefix}:payout:`),
    batch: (key: string) => key.startsWith(`${prefix}:batch`),
    fingerprints: (key: string) => key.startsWith(`${prefix}:fpd:`) || key.startsWith(`${prefix}:fp:`),
  };
  const all: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await redis.client.scan(cursor, 'COUNT', 1000);
    cursor = next;
    all.push(...found);
  } while (cursor !== '0');
  const freed = { records: 0, payouts: 0, batch: 0, fingerprints: 0 };
  for (const [kind, isOf] of Object.entries(kinds) as [keyof typeof freed, (k: string) => boolean][]) {
    const before = await settledMemory(redis.client);
    const doomed = all.filter(isOf);
    for (let i = 0; i < doomed.length; i += 500) await redis.client.del(...doomed.slice(i, i + 500));
    freed[kind] = before.used - (await settledMemory(redis.client)).used;
  }
  return freed;
}

/** Σ MEMORY USAGE of BullMQ's `…:events` streams (capped: a fixed ceiling, not per transfer). */
async function eventStreamBytes(redis: BenchRedis, prefix: string): Promise<number> {
  return await matchedBytes(redis.client, `${prefix}:*:events`);
}

/** The `ip:port` Redis sees a client at (CLIENT INFO's `addr`), as MONITOR names it. */
async function clientAddress(client: Redis): Promise<string> {
  const info = String(await client.call('CLIENT', 'INFO'));
  return /\baddr=(\S+)/.exec(info)?.[1] ?? '';
}

/**
 * Until the intent follower follows nothing (every intent reached a final status: the follow set
 * `P:follow` is empty) and the `intents` queue (failed intents' jobs) has no job left to run.
 * Returns the ZCARDs it sent (one a round).
 */
export async function waitIntentsFollowed(
  redis: BenchRedis,
  prefix: string,
  timeoutMs: number,
): Promise<number> {
  const q = new Queue(INTENT_QUEUE, { connection: { url: redis.url }, prefix, skipMetasUpdate: true });
  q.on('error', () => {});
  try {
    const deadline = Date.now() + timeoutMs;
    for (let rounds = 1; ; rounds++) {
      // One ZCARD a round (the caller leaves them out of the phase's commands): the queue is asked
      // only once it is 0 (its script is counted: once or twice a run).
      const followed = await redis.client.zcard(keys(prefix).follow);
      const c =
        followed === 0
          ? await q.getJobCounts('wait', 'active', 'delayed', 'prioritized', 'waiting-children')
          : {};
      if (followed === 0 && Object.values(c).every((v) => v === 0)) return rounds;
      if (Date.now() > deadline)
        throw new Error(
          `intents still followed after ${timeoutMs} ms: ${followed} in ${keys(prefix).follow}, ${JSON.stringify(c)}`,
        );
      await new Promise((r) => setTimeout(r, 250));
    }
  } finally {
    await q.close();
  }
}
