import { statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { keys } from '../../src/store/keys.ts';
import { commandCalls, info, settledMemory, totalCalls, usedMemory } from '../lib/redis-info.ts';
import { runNodeTimed } from '../lib/processes.ts';
import { mixedRows } from '../lib/rows.ts';
import { enqueueFile, startBenchRedis, writeCsv, type BenchRedis } from '../lib/stack.ts';

const RAW_INGEST = fileURLToPath(new URL('../raw/ingest.ts', import.meta.url));

/** One side's measure in one Redis: the enqueue (or the raw script) after the fill. */
export type IngestSide = {
  readonly ms: number;
  readonly rss: number;
  readonly commandsPerRow: number;
  readonly bytesPerRow: number;
  /** AOF rewrites Redis ran (or finished) during the measured run. */
  readonly aofRewrites: number;
  /** CPU seconds of Redis' forked children (the AOF rewrite) during the measured run. */
  readonly rewriteCpuS: number;
  /** CPU seconds of the Redis server itself (its main process) during the measured run. */
  readonly redisCpuS: number;
  /** AOF bytes written per row (NaN when a rewrite during the run makes the AOF's growth unknown). */
  readonly aofBytesPerRow: number;
};

export type IngestRun = {
  /** Rows already stored, under other prefixes, before the measured run. */
  readonly fillRows: number;
  readonly oursMs: number;
  readonly rawMs: number;
  readonly oursRss: number;
  readonly rawRss: number;
  readonly oursCommandsPerRow: number;
  readonly rawCommandsPerRow: number;
  readonly oursBytesPerRow: number;
  readonly rawBytesPerRow: number;
  readonly oursAofRewrites: number;
  readonly rawAofRewrites: number;
  readonly oursRewriteCpuS: number;
  readonly rawRewriteCpuS: number;
  readonly oursRedisCpuS: number;
  readonly rawRedisCpuS: number;
  readonly oursAofBytesPerRow: number;
  readonly rawAofBytesPerRow: number;
};

export type IngestResult = {
  readonly rows: number;
  readonly fileBytes: number;
  readonly rssSource: string;
  /** The fill levels measured (rows already in Redis), each with `runs` of its own. */
  readonly fills: readonly number[];
  readonly runs: readonly IngestRun[];
};

const SERVICE_ENV = {
  // enqueue loads the service settings (it can --dry-run); nothing is called without --dry-run.
  TRANSFER_API_URL: 'http://127.0.0.1:9',
  TRANSFER_API_KEY: 'sk_bench_unused',
  LOG_LEVEL: 'warn',
};

/**
 * 1. `usdc-batch enqueue FILE.csv` (the whole process: start-up, validation of every row, batch and
 * transfer records, payout-id claims, jobs) against a raw BullMQ script adding the same rows as
 * jobs with `addBulk` in chunks of 1000 — in an empty Redis and in one that already holds one and
 * two earlier enqueues of the file (under other `QUEUE_PREFIX`es, through the product), as a Redis
 * that has been in use for a while does. Each side gets a fresh durable Redis (AOF, fsync always,
 * Redis' default AOF rewrite settings) per run and fill level; the order alternates between runs so
 * neither always runs on a warmer machine.
 */
export async function benchIngest(p: {
  rows: number;
  runs: number;
  dir: string;
  log: (s: string) => void;
}): Promise<IngestResult> {
  const rows = mixedRows(p.rows, 'pay');
  const file = writeCsv(p.dir, 'ingest.csv', rows);
  const fileBytes = statSync(file).size;
  const fills = [0, p.rows, 2 * p.rows];
  const runs: IngestRun[] = [];
  let rssSource = '';

  const ours = async (fill: number): Promise<IngestSide> =>
    await measured(file, p.rows, fill, async (redis) => {
      const prefix = 'usdc';
      const res = await enqueueFile(file, { REDIS_URL: redis.url, QUEUE_PREFIX: prefix, ...SERVICE_ENV });
      if (res.accepted !== p.rows) throw new Error(`enqueue accepted ${res.accepted} of ${p.rows} rows`);
      const jobs = await countJobs(redis.client, prefix);
      if (jobs !== p.rows) throw new Error(`enqueue left ${jobs} jobs for ${p.rows} rows`);
      const done = await redis.client.hget(keys(prefix).batch(res.batchId), 'enqueued');
      if (done !== '1') throw new Error('the batch is not marked enqueued');
      rssSource = res.rssSource;
      return { ms: res.wallMs, rss: res.peakRss };
    });
  const raw = async (fill: number): Promise<IngestSide> =>
    await measured(file, p.rows, fill, async (redis) => {
      const res = await runNodeTimed(
        [RAW_INGEST, file],
        { REDIS_URL: redis.url, QUEUE_PREFIX: 'raw' },
        300_000,
      );
      if (res.code !== 0) throw new Error(`raw ingest exited ${res.code}: ${res.stderr.slice(-2000)}`);
      const jobs = await redis.client.llen('raw:raw-transfers:wait');
      if (jobs !== p.rows) throw new Error(`raw ingest left ${jobs} jobs for ${p.rows} rows`);
      return { ms: res.wallMs, rss: res.peakRss };
    });

  for (let i = 0; i < p.runs; i++) {
    for (const fill of fills) {
      const oursFirst = i % 2 === 0;
      const a = oursFirst ? await ours(fill) : await raw(fill);
      const b = oursFirst ? await raw(fill) : await ours(fill);
      const [o, r] = oursFirst ? [a, b] : [b, a];
      runs.push(runOf(fill, o, r));
      p.log(
        `ingest run ${i + 1}, ${fill} rows stored before: enqueue ${(o.ms / 1000).toFixed(2)} s (${(o.rss / 1048576).toFixed(0)} MB, ${o.commandsPerRow.toFixed(1)} cmds/row, Redis CPU ${o.redisCpuS.toFixed(1)} s, ${o.aofRewrites} AOF rewrites, ${o.rewriteCpuS.toFixed(1)} s, AOF ${o.aofBytesPerRow.toFixed(0)} B/row), raw ${(r.ms / 1000).toFixed(2)} s (${r.commandsPerRow.toFixed(1)} cmds/row, Redis CPU ${r.redisCpuS.toFixed(1)} s, ${r.aofRewrites} AOF rewrites, ${r.rewriteCpuS.toFixed(1)} s, AOF ${r.aofBytesPerRow.toFixed(0)} B/row), ratio ${(o.ms / r.ms).toFixed(2)}`,
      );
    }
  }
  return { rows: p.rows, fileBytes, rssSource, fills, runs };
}

function runOf(fillRows: number, o: IngestSide, r: IngestSide): IngestRun {
  return {
    fillRows,
    oursMs: o.ms,
    rawMs: r.ms,
    oursRss: o.rss,
    rawRss: r.rss,
    oursCommandsPerRow: o.commandsPerRow,
    rawCommandsPerRow: r.commandsPerRow,
    oursBytesPerRow: o.bytesPerRow,
    rawBytesPerRow: r.bytesPerRow,
    oursAofRewrites: o.aofRewrites,
    rawAofRewrites: r.aofRewrites,
    oursRewriteCpuS: o.rewriteCpuS,
    rawRewriteCpuS: r.rewriteCpuS,
    oursRedisCpuS: o.redisCpuS,
    rawRedisCpuS: r.redisCpuS,
    oursAofBytesPerRow: o.aofBytesPerRow,
    rawAofBytesPerRow: r.aofBytesPerRow,
  };
}

/**
 * A fresh durable Redis filled with `fill` rows (whole enqueues of the file under the prefixes
 * `fill0`, `fill1`, …), then one side's run in it, with Redis' counters read around that run only.
 */
async function measured(
  file: string,
  rows: number,
  fill: number,
  run: (redis: BenchRedis) => Promise<{ ms: number; rss: number }>,
): Promise<IngestSide> {
  const redis = await startBenchRedis();
  try {
    await fillRedis(redis, file, fill);
    await waitNoRewrite(redis.client);
    await redis.client.config('RESETSTAT');
    const before = await rewriteCounters(redis.client);
    const m0 = await usedMemory(redis.client);
    const res = await run(redis);
    const after = await rewriteCounters(redis.client);
    const calls = totalCalls(await commandCalls(redis.client));
    return {
      ms: res.ms,
      rss: res.rss,
      commandsPerRow: calls / rows,
      // Read last: its RESETSTAT empties the latency histograms the run's commands made (redis-info.ts).
      bytesPerRow: ((await settledMemory(redis.client)).used - m0) / rows,
      aofRewrites: after.rewrites - before.rewrites + (after.inProgress ? 1 : 0),
      rewriteCpuS: after.childCpuS - before.childCpuS,
      redisCpuS: after.cpuS - before.cpuS,
      aofBytesPerRow:
        after.rewrites === before.rewrites && !after.inProgress
          ? (after.aofBytes - before.aofBytes) / rows
          : Number.NaN,
    };
  } finally {
    await redis.stop();
  }
}

/** Enqueues the file under other prefixes (`fill0`, `fill1`, …) until `fill` rows are stored. */
async function fillRedis(redis: BenchRedis, file: string, fill: number): Promise<void> {
  for (let i = 0, stored = 0; stored < fill; i++) {
    const res = await enqueueFile(file, { REDIS_URL: redis.url, QUEUE_PREFIX: `fill${i}`, ...SERVICE_ENV });
    if (res.accepted === 0) throw new Error('the fill enqueue accepted no rows');
    stored += res.accepted;
  }
}

async function rewriteCounters(
  client: Redis,
): Promise<{ rewrites: number; inProgress: boolean; childCpuS: number; cpuS: number; aofBytes: number }> {
  const persistence = await info(client, 'persistence');
  const cpu = await info(client, 'cpu');
  return {
    rewrites: Number((await info(client, 'stats')).get('total_forks') ?? 0),
    inProgress: persistence.get('aof_rewrite_in_progress') === '1',
    aofBytes: Number(persistence.get('aof_current_size') ?? Number.NaN),
    cpuS: Number(cpu.get('used_cpu_user') ?? 0) + Number(cpu.get('used_cpu_sys') ?? 0),
    childCpuS: Number(cpu.get('used_cpu_user_children') ?? 0) + Number(cpu.get('used_cpu_sys_children') ?? 0),
  };
}

/** Waits for an AOF rewrite the fill started to finish, so both sides start from the same state. */
async function waitNoRewrite(client: Redis): Promise<void> {
  for (;;) {
    const persistence = await info(client, 'persistence');
    if (
      persistence.get('aof_rewrite_in_progress') !== '1' &&
      persistence.get('aof_rewrite_scheduled') !== '1'
    )
      return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Jobs waiting in the product's per-source-chain queues. */
async function countJobs(client: Redis, prefix: string): Promise<number> {
  let n = 0;
  for (const chain of ['ETH', 'BASE', 'ARB', 'POLYGON', 'SOLANA']) {
    n += await client.llen(`${prefix}:transfers-${chain}:wait`);
  }
  return n;
}
