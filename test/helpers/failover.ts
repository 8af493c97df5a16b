import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import type { Chain } from '../../src/domain/chains.ts';
import { queueNameFor, transferJobId } from '../../src/queue/jobs.ts';
import { createBatchReader, type BatchStatus } from '../../src/present/batch-status.ts';
import { runCli, waitFor, type CliResult, type SpawnedProcess } from './cli.ts';
import { jobListOf, productEnv } from './e2e.ts';
import { csvOf, randomEvmAddress, type Row } from './fixtures.ts';
import type { SandboxProcess } from './sandbox.ts';

/*
 * The product over a replicated Redis, for the failover tests (docs/replicated-redis.md): the
 * environment (its Redis settings given), a status reader on the test's own client, enqueue through
 * the real CLI, and a wait for completion that, when it times out, says what is stuck.
 */

const EVM = ['ETH', 'BASE', 'ARB', 'POLYGON'] as const;

/** EVM rows only (each paid by a permit), every recipient its own. */
export function evmRows(n: number, prefix: string): Row[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `${prefix}-${i}`,
    from: EVM[i % 4] as string,
    to: EVM[(i + 1) % 4] as string,
    amount: `${20 + (i % 40)}.${String(i % 100).padStart(2, '0')}`,
    recipient: randomEvmAddress(),
  }));
}

export type FailoverStack = {
  readonly env: Record<string, string>;
  readonly prefix: string;
  status(batchId: string): Promise<BatchStatus>;
  /** Enqueues through the CLI (`--json`); the batch id, or the CLI's result when it failed. */
  enqueue(
    rows: Row[],
    name: string,
    extraEnv?: Record<string, string>,
  ): Promise<CliResult & { batchId: string | undefined }>;
  /** Whether a transfer of the batch shows the replica wait as its reason. */
  waitingForReplicas(batchId: string): Promise<boolean>;
  waitComplete(batchId: string, worker: SpawnedProcess, timeoutMs?: number): Promise<BatchStatus>;
};

export function failoverStack(p: {
  readonly name: string;
  readonly sandbox: SandboxProcess;
  readonly dir: string;
  readonly solanaKeyFile: string;
  /** REDIS_URL, or the Sentinel settings. */
  readonly redisEnv: Record<string, string>;
  /** The test's own connection to whatever is the primary. */
  readonly client: Redis;
  readonly extra?: Record<string, string>;
  /** QUEUE_PREFIX; `fo<name>` unless given (a hash tag on a Redis Cluster). */
  readonly prefix?: string;
}): FailoverStack {
  const prefix = p.prefix ?? `fo${p.name}`;
  const env = {
    ...productEnv({
      redisUrl: p.redisEnv['REDIS_URL'] ?? 'redis://127.0.0.1:6379',
      prefix,
      sandbox: p.sandbox,
      solanaKeyFile: p.solanaKeyFile,
      extra: {
        WORKER_CONCURRENCY: '8',
        SERVICE_RESPONSE_TIMEOUT_MS: '2000',
        REDIS_REPLICA_ACK_TIMEOUT_MS: '1000',
        ...p.extra,
      },
    }),
    ...p.redisEnv,
  };
  const reader = createBatchReader({ redis: p.client, prefix });
  const status = async (batchId: string): Promise<BatchStatus> => {
    const doc = await reader.status(batchId);
    if (!doc) throw new Error(`no batch ${batchId}`);
    return doc;
  };
  return {
    env,
    prefix,
    status,
    async enqueue(rows, name, extraEnv = {}) {
      const file = join(p.dir, `${name}.csv`);
      writeFileSync(file, csvOf(rows));
      const res = await runCli(['enqueue', file, '--json'], { ...env, ...extraEnv });
      let batchId: string | undefined;
      try {
        batchId = (JSON.parse(res.stdout) as { batch_id?: string }).batch_id;
      } catch {
        batchId = undefined;
      }
      return { ...res, batchId: res.code === 0 ? batchId : undefined };
    },
    async waitingForReplicas(batchId) {
      const doc = await status(batchId);
      return doc.transfers.some((t) => /waiting for Redis replicas/.test(t.wait_reason ?? ''));
    },
    async waitComplete(batchId, worker, timeoutMs = 150_000) {
      try {
        return await waitFor(
          `batch ${batchId} to complete`,
          async () => {
            const d = await status(batchId);
            return d.complete ? d : undefined;
          },
          { timeoutMs, intervalMs: 250 },
        );
      } catch (err) {
        throw new Error(
          `${(err as Error).message}\n${await stuck(p.client, prefix, await status(batchId))}\n${worker.output().slice(-4000)}`,
        );
      }
    },
  };
}

/** The counts, and the record, lock, job list and job hash of the first transfers not final. */
async function stuck(client: Redis, prefix: string, doc: BatchStatus): Promise<string> {
  const open = doc.transfers.filter((t) => t.state === 'queued' || t.state === 'in_progress').slice(0, 3);
  const about = await Promise.all(
    open.map(async (t) => {
      const queue = `${prefix}:${queueNameFor(t.from as Chain)}`;
      const jobId = transferJobId(doc.batch_id, t.id);
      const record = `${prefix}:t:${doc.batch_id}:${t.id}`;
      return {
        record: await client.hgetall(record),
        lockTtl: await client.pttl(`${record}:lock`),
        job: await jobListOf(client, queue, jobId),
        jobHash: await client.hmget(
          `${queue}:${jobId}`,
          'processedOn',
          'finishedOn',
          'atm',
          'stc',
          'failedReason',
        ),
      };
    }),
  );
  return `counts ${JSON.stringify(doc.counts)}\nstuck ${JSON.stringify(about, null, 1)}`;
}
