import { statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { keys } from '../../src/store/keys.ts';
import { commandCalls, totalCalls, usedMemory } from '../lib/redis-info.ts';
import { runNodeTimed } from '../lib/processes.ts';
import { mixedRows } from '../lib/rows.ts';
import { enqueueFile, startBenchRedis, writeCsv } from '../lib/stack.ts';

const RAW_INGEST = fileURLToPath(new URL('../raw/ingest.ts', import.meta.url));

export type IngestRun = {
  readonly oursMs: number;
  readonly rawMs: number;
  readonly oursRss: number;
  readonly rawRss: number;
  readonly oursCommandsPerRow: number;
  readonly rawCommandsPerRow: number;
  readonly oursBytesPerRow: number;
  readonly rawBytesPerRow: number;
};

export type IngestResult = {
  readonly rows: number;
  readonly fileBytes: number;
  readonly rssSource: string;
  readonly runs: readonly IngestRun[];
};

/**
 * 1. `usdc-batch enqueue FILE.csv` (the whole process: start-up, validation of every row, batch and
 * transfer records, payout-id claims, jobs) against a raw BullMQ script adding the same rows as
 * jobs with `addBulk` in chunks of 1000. Each side gets a fresh durable Redis per run; the order
 * alternates between runs so neither always runs on a warmer machine.
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
  const runs: IngestRun[] = [];
  let rssSource = '';

  const ours = async () => {
    const redis = await startBenchRedis();
    try {
      const prefix = 'usdc';
      const m0 = await usedMemory(redis.client);
      const res = await enqueueFile(file, {
        REDIS_URL: redis.url,
        QUEUE_PREFIX: prefix,
        // enqueue loads the service settings (it can --dry-run); nothing is called without --dry-run.
        TRANSFER_API_URL: 'http://127.0.0.1:9',
        TRANSFER_API_KEY: 'sk_bench_unused',
        LOG_LEVEL: 'warn',
      });
      if (res.accepted !== p.rows) throw new Error(`enqueue accepted ${res.accepted} of ${p.rows} rows`);
      const jobs = await countJobs(redis.client, prefix);
      if (jobs !== p.rows) throw new Error(`enqueue left ${jobs} jobs for ${p.rows} rows`);
      const done = await redis.client.hget(keys(prefix).batch(res.batchId), 'enqueued');
      if (done !== '1') throw new Error('the batch is not marked enqueued');
      rssSource = res.rssSource;
      return {
        ms: res.wallMs,
        rss: res.peakRss,
        commands: totalCalls(await commandCalls(redis.client)) / p.rows,
        bytes: ((await usedMemory(redis.client)) - m0) / p.rows,
      };
    } finally {
      await redis.stop();
    }
  };
  const raw = async () => {
    const redis = await startBenchRedis();
    try {
      const m0 = await usedMemory(redis.client);
      const res = await runNodeTimed(
        [RAW_INGEST, file],
        { REDIS_URL: redis.url, QUEUE_PREFIX: 'raw' },
        300_000,
      );
      if (res.code !== 0) throw new Error(`raw ingest exited ${res.code}: ${res.stderr.slice(-2000)}`);
      const jobs = await redis.client.llen('raw:raw-transfers:wait');
      if (jobs !== p.rows) throw new Error(`raw ingest left ${jobs} jobs for ${p.rows} rows`);
      return {
        ms: res.wallMs,
        rss: res.peakRss,
        commands: totalCalls(await commandCalls(redis.client)) / p.rows,
        bytes: ((await usedMemory(redis.client)) - m0) / p.rows,
      };
    } finally {
      await redis.stop();
    }
  };

  for (let i = 0; i < p.runs; i++) {
    const first = i % 2 === 0 ? 'ours' : 'raw';
    const a = first === 'ours' ? await ours() : await raw();
    const b = first === 'ours' ? await raw() : await ours();
    const [o, r] = first === 'ours' ? [a, b] : [b, a];
    const run: IngestRun = {
      oursMs: o.ms,
      rawMs: r.ms,
      oursRss: o.rss,
      rawRss: r.rss,
      oursCommandsPerRow: o.commands,
      rawCommandsPerRow: r.commands,
      oursBytesPerRow: o.bytes,
      rawBytesPerRow: r.bytes,
    };
    runs.push(run);
    p.log(
      `ingest run ${i + 1}: enqueue ${(o.ms / 1000).toFixed(2)} s (${(o.rss / 1048576).toFixed(0)} MB), raw ${(r.ms / 1000).toFixed(2)} s, ratio ${(o.ms / r.ms).toFixed(2)}`,
    );
  }
  return { rows: p.rows, fileBytes, rssSource, runs };
}

/** Jobs waiting in the product's per-source-chain queues. */
async function countJobs(client: Redis, prefix: string): Promise<number> {
  let n = 0;
  for (const chain of ['ETH', 'BASE', 'ARB', 'POLYGON', 'SOLANA']) {
    n += await client.llen(`${prefix}:transfers-${chain}:wait`);
  }
  return n;
}
