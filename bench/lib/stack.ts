import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { keys } from '../../src/store/keys.ts';
import { BIN, spawnCli, type SpawnedProcess } from '../../support/cli.ts';
import { csvOf, type Row } from '../../support/fixtures.ts';
import { startPrivateRedis, type TestRedis } from '../../support/redis.ts';
import { startSandboxProcess, type SandboxProcess } from '../../support/sandbox.ts';
import { onCleanup, trackChild } from './cleanup.ts';
import { runNodeTimed, type TimedResult } from './processes.ts';

/**
 * The pieces of the product as a user runs them, for the bench: a private durable redis-server
 * (`appendonly yes`, `appendfsync always`, as the worker requires), the sandbox in its own process,
 * `usdc-batch enqueue` and `usdc-batch worker` as separate processes through the real CLI.
 */

export type BenchRedis = {
  readonly server: TestRedis;
  readonly url: string;
  /** The bench's own connection, for INFO and for reading results. */
  readonly client: Redis;
  /** The PIDs of its redis-server processes (the replica's too), for their CPU (process-cpu.ts). */
  pids(): number[];
  stop(): Promise<void>;
};

/**
 * A durable Redis for one run; with `replica`, a durable replica of it too (`--replicaof`, on
 * loopback), in sync before this returns: the worker then waits for its acknowledgement before
 * every send (docs/replicated-redis.md).
 */
export async function startBenchRedis(
  extraArgs?: readonly string[],
  options: { replica?: boolean } = {},
): Promise<BenchRedis> {
  const server = await startPrivateRedis({ durable: true, ...(extraArgs ? { extraArgs } : {}) });
  const replica = options.replica
    ? await startPrivateRedis({ durable: true, extraArgs: ['--replicaof', '127.0.0.1', String(server.port)] })
    : undefined;
  const client = new Redis(server.url, { maxRetriesPerRequest: 2 });
  client.on('error', () => {});
  const stop = onCleanup(async () => {
    client.disconnect();
    await replica?.stop();
    await server.stop();
  });
  if (replica) await replicaOnline(client);
  const pids = () => [server.pid, replica?.pid].filter((p): p is number => p !== undefined);
  return { server, url: server.url, client, pids, stop };
}

/** Resolves once the primary reports its replica online (the initial sync done). */
async function replicaOnline(client: Redis): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!/^slave0:.*state=online/m.test(await client.info('replication'))) {
    if (Date.now() > deadline) throw new Error('the bench replica did not come online in 60 s');
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function startBenchSandbox(
  latencyMs: number,
): Promise<SandboxProcess & { close(): Promise<void> }> {
  const sandbox = await startSandboxProcess({ latencyMs });
  trackChild(sandbox.child);
  const close = onCleanup(() => sandbox.stop());
  return Object.assign(sandbox, { close });
}

// The environment `enqueue` and `worker` get is the tests' own (support/product-env.ts).
export { productEnv } from '../../support/product-env.ts';

export function writeCsv(dir: string, name: string, rows: readonly Row[]): string {
  const file = join(dir, name);
  writeFileSync(file, csvOf([...rows]));
  return file;
}

export type EnqueueRun = TimedResult & { readonly batchId: string; readonly accepted: number };

/** `usdc-batch enqueue FILE --json` as its own process, timed, with its peak RSS. */
export async function enqueueFile(
  file: string,
  env: Record<string, string>,
  timeoutMs = 300_000,
): Promise<EnqueueRun> {
  const res = await runNodeTimed([BIN, 'enqueue', file, '--json'], env, timeoutMs);
  let doc: { batch_id?: string; accepted?: number };
  try {
    doc = JSON.parse(res.stdout) as typeof doc;
  } catch {
    throw new Error(
      `enqueue printed no JSON (exit ${res.code}): ${res.stdout.slice(0, 500)} ${res.stderr.slice(-2000)}`,
    );
  }
  if (res.code !== 0 || !doc.batch_id) {
    throw new Error(`enqueue exited ${res.code}: ${res.stdout.slice(0, 2000)} ${res.stderr.slice(-2000)}`);
  }
  return { ...res, batchId: doc.batch_id, accepted: Number(doc.accepted ?? 0) };
}

export type WorkerGroup = {
  readonly processes: readonly SpawnedProcess[];
  /** Whatever the processes printed (logs are at `warn`), for failure messages and CROSSSLOT checks. */
  output(): string;
  stop(): Promise<void>;
};

/** `n` × `usdc-batch worker`, each its own process. */
export function startWorkers(n: number, env: Record<string, string>): WorkerGroup {
  const processes = Array.from({ length: n }, () => spawnCli(['worker'], env));
  for (const p of processes) trackChild(p.child);
  const stop = onCleanup(async () => {
    await Promise.all(processes.map((p) => p.stop(15_000)));
  });
  return { processes, output: () => processes.map((p) => p.output()).join('\n'), stop };
}

/**
 * Resolves when the batch record says `complete`, with the number of HGETs it sent to see it (a
 * section that counts the product's commands leaves them out); throws at the deadline or if every
 * worker died.
 */
export async function waitBatchComplete(
  client: Redis,
  prefix: string,
  batchId: string,
  workers: WorkerGroup,
  timeoutMs: number,
): Promise<number> {
  const key = keys(prefix).batch(batchId);
  const deadline = Date.now() + timeoutMs;
  for (let polls = 1; ; polls++) {
    // One HGET per poll: the status document of a large batch would load the Redis we measure.
    if ((await client.hget(key, 'complete')) === '1') return polls;
    if (workers.processes.every((p) => p.child.exitCode !== null || p.child.signalCode !== null)) {
      throw new Error(
        `every worker exited before batch ${batchId} completed:\n${workers.output().slice(-3000)}`,
      );
    }
    if (Date.now() > deadline) {
      const counts = await client.hgetall(key);
      throw new Error(
        `batch ${batchId} did not complete within ${timeoutMs} ms (${JSON.stringify(counts)}):\n${workers.output().slice(-3000)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

export type BatchOutcome = {
  readonly rows: number;
  readonly submitted: number;
  readonly notSubmitted: number;
  /** First transfer taken by a worker → the batch complete (worker start-up excluded), ms. */
  readonly windowMs: number;
  readonly perSecond: number;
  /** When the first transfer was taken (epoch ms, the records' `first_seen_at`). */
  readonly firstTakenAt: number;
};

/**
 * Throughput from the records themselves: the earliest `first_seen_at` (a worker took the transfer)
 * to the batch's `completed_at` (the transition that made the last transfer final).
 */
export async function batchOutcome(client: Redis, prefix: string, batchId: string): Promise<BatchOutcome> {
  const k = keys(prefix);
  const batch = await client.hgetall(k.batch(batchId));
  const ids = await client.zrange(k.batchRows(batchId), 0, -1);
  let first = Number.POSITIVE_INFINITY;
  for (let i = 0; i < ids.length; i += 1000) {
    const pipe = client.pipeline();
    for (const id of ids.slice(i, i + 1000)) pipe.hget(k.transfer(batchId, id), 'first_seen_at');
    for (const [err, v] of (await pipe.exec()) ?? []) {
      if (!err && v) first = Math.min(first, Number(v));
    }
  }
  const end = Number(batch['completed_at']);
  const rows = Number(batch['rows']);
  const submitted = Number(batch['n_submitted']);
  const windowMs = end - first;
  return {
    rows,
    submitted,
    notSubmitted: rows - submitted,
    windowMs,
    perSecond: (rows / windowMs) * 1000,
    firstTakenAt: first,
  };
}
