import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { Chain } from '../../src/domain/chains.ts';
import { queueNameFor, transferJobId } from '../../src/queue/jobs.ts';
import { createBatchReader, type BatchStatus } from '../../src/present/batch-status.ts';
import { keys } from '../../src/store/keys.ts';
import type { LedgerEntry } from '../../src/sandbox/sandbox.ts';
import type { SandboxConfigPatch } from '../../src/sandbox/sandbox-config.ts';
import { REPO_ROOT, runCli, spawnCli, waitFor, type CliResult, type SpawnedProcess } from './cli.ts';
import { csvOf, solanaKeypairFile, type Row } from './fixtures.ts';
import { startPrivateRedis, type TestRedis } from './redis.ts';
import { startSandboxProcess, TEST_EVM_ADDRESS, type SandboxProcess } from './sandbox.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { EVM_CHAINS } from '../../src/domain/chains.ts';
import { createChainReader } from '../../src/signing/evm/chain-reader.ts';
import { productEnv } from '../../support/product-env.ts';
import { metricKeys } from '../../src/metrics/worker-metrics.ts';

export { productEnv };

/**
 * The whole product as a user runs it: a private durable redis-server, the sandbox in its own
 * process, worker processes spawned through the real CLI, batches enqueued through the real CLI.
 */
export type Stack = {
  readonly redis: TestRedis;
  readonly client: Redis;
  readonly sandbox: SandboxProcess;
  readonly env: Record<string, string>;
  /** The public address of the Solana key in `env` (SOLANA_KEYPAIR_FILE). */
  readonly solanaAddress: string;
  readonly dir: string;
  enqueue(rows: Row[], args?: string[]): Promise<CliResult & { batchId: string }>;
  startWorker(extraEnv?: Record<string, string>): SpawnedProcess;
  /**
   * Waits until every worker started and still running has started: its heartbeat is in Redis, so
   * its start's one estimate (the TRANSFER_API_KEY check) is behind it. A test that scripts the
   * service's answers to estimates scripts them after this.
   */
  workersReady(): Promise<void>;
  status(batchId: string): Promise<BatchStatus>;
  /** The batch's counts per state, from its record alone (cheap enough to poll; `status` reads every row). */
  counts(batchId: string): Promise<BatchStatus['counts']>;
  waitComplete(batchId: string, timeoutMs?: number): Promise<BatchStatus>;
  ledger(): Promise<LedgerEntry[]>;
  stop(): Promise<void>;
};

/**
 * The sandbox funds an owner the first time it meets it (in a new block); the worker reserves what
 * `balanceOf` shows at the RPC's head, which a lagging RPC shows only `rpcNonceLagMs` later. Meets
 * the owners now (a `balanceOf` read through the RPC) and waits until every chain's RPC shows it.
 */
export async function fundOwners(sandbox: SandboxProcess, owners: readonly string[]): Promise<void> {
  const reader = createChainReader({
    config: loadConfig({
      EVM_RPC_URL_ETH: sandbox.rpc.ETH,
      EVM_RPC_URL_BASE: sandbox.rpc.BASE,
      EVM_RPC_URL_ARB: sandbox.rpc.ARB,
      EVM_RPC_URL_POLYGON: sandbox.rpc.POLYGON,
    }),
  });
  for (const chain of EVM_CHAINS) {
    for (const owner of owners) {
      await waitFor(
        `${chain} RPC to show ${owner}'s funding`,
        async () => (((await reader.usdcBalance(chain, owner)) ?? 0n) > 0n ? true : undefined),
        { timeoutMs: 30_000, intervalMs: 100 },
      );
    }
  }
}

export async function startStack(
  options: { sandbox?: SandboxConfigPatch; env?: Record<string, string>; latencyMs?: number } = {},
): Promise<Stack> {
  const dir = mkdtempSync(join(tmpdir(), 'usdc-e2e-'));
  // Redis and the sandbox start side by side (neither needs the other); one that failed is stopped.
  const [redisStart, sandboxStart] = await Promise.allSettled([
    startPrivateRedis({ durable: true }),
    startSandboxProcess({
      ...(options.latencyMs !== undefined ? { latencyMs: options.latencyMs } : {}),
      ...(options.sandbox ? { config: options.sandbox } : {}),
    }),
  ]);
  if (redisStart.status === 'rejected' || sandboxStart.status === 'rejected') {
    if (redisStart.status === 'fulfilled') await redisStart.value.stop();
    if (sandboxStart.status === 'fulfilled') await sandboxStart.value.stop();
    throw redisStart.status === 'rejected'
      ? redisStart.reason
      : (sandboxStart as PromiseRejectedResult).reason;
  }
  const redis = redisStart.value;
  const sandbox = sandboxStart.value;
  await fundOwners(sandbox, [TEST_EVM_ADDRESS]);
  const sol = solanaKeypairFile(dir);
  const prefix = `e2e${Math.random().toString(36).slice(2, 8)}`;
  const env = productEnv({
    redisUrl: redis.url,
    prefix,
    sandbox,
    solanaKeyFile: sol.file,
    extra: { SERVICE_RESPONSE_TIMEOUT_MS: '2000', ...options.env },
  });
  const client = new Redis(redis.url, { maxRetriesPerRequest: null });
  client.on('error', () => {});
  const reader = createBatchReader({ redis: client, prefix });
  const workers: SpawnedProcess[] = [];
  let n = 0;

  const status = async (batchId: string) => {
    const doc = await reader.status(batchId);
    if (!doc) throw new Error(`no batch ${batchId}`);
    return doc;
  };

  return {
    redis,
    client,
    sandbox,
    env,
    solanaAddress: sol.address,
    dir,
    async enqueue(rows, args = []) {
      const file = join(dir, `batch-${n++}.csv`);
      writeFileSync(file, csvOf(rows));
      const res = await runCli(['enqueue', file, '--json', ...args], env);
      let batchId = '';
      try {
        batchId = (JSON.parse(res.stdout) as { batch_id: string }).batch_id;
      } catch {
        throw new Error(`enqueue printed no JSON (exit ${res.code}): ${res.stdout}\n${res.stderr}`);
      }
      return { ...res, batchId };
    },
    startWorker(extraEnv = {}) {
      const w = spawnCli(['worker'], { ...env, ...extraEnv });
      workers.push(w);
      return w;
    },
    async workersReady() {
      const running = workers.filter((w) => w.child.exitCode === null && w.child.signalCode === null);
      await waitFor(
        'every worker to start',
        async () => {
          const beats = await client.zrange(`${prefix}:workers`, 0, -1);
          return running.every((w) => beats.some((m) => m.includes(`:${w.child.pid}:`)));
        },
        { timeoutMs: 60_000, intervalMs: 100 },
      );
    },
    status,
    async counts(batchId) {
      const summary = await reader.summary(batchId);
      if (!summary) throw new Error(`no batch ${batchId}`);
      return summary.counts;
    },
    async waitComplete(batchId, timeoutMs = 120_000) {
      try {
        // One field of the batch record, read every 50 ms (a cheap HGET on the workers' cores, not
        // the whole status document), then the document once it is complete.
        await waitFor(
          `batch ${batchId} to complete`,
          async () => (await client.hget(keys(prefix).batch(batchId), 'complete')) === '1',
          { timeoutMs, intervalMs: 50 },
        );
        return await status(batchId);
      } catch (err) {
        // Say what was stuck: the counts and the records of the transfers that are not final.
        const doc = await status(batchId);
        const stuck = doc.transfers
          .filter((t) => t.state === 'queued' || t.state === 'in_progress')
          .slice(0, 5);
        const raws = await Promise.all(
          stuck.map(async (t) => {
            // Where its job is (BullMQ keys) and who holds the transfer's processing lock.
            const q = `${prefix}:${queueNameFor(t.from as Chain)}`;
            const jobId = transferJobId(batchId, t.id);
            const record = keys(prefix).transfer(batchId, t.id);
            const [rec, lock, lockTtl, jobLock, jobState, job] = await Promise.all([
              client.hgetall(record),
              client.get(`${record}:lock`),
              client.pttl(`${record}:lock`),
              client.get(`${q}:${jobId}:lock`),
              jobListOf(client, q, jobId),
              client.hmget(`${q}:${jobId}`, 'atm', 'stc', 'ats', 'failedReason', 'processedOn'),
            ]);
            return { ...rec, lock, lockTtl, jobLock, jobState, job };
          }),
        );
        const out = workers.map((w, i) => `--- worker ${i}\n${w.output().slice(-3000)}`).join('\n');
        throw new Error(
          `${(err as Error).message}\ncounts ${JSON.stringify(doc.counts)}\nstuck ${JSON.stringify(raws, null, 1)}\n${out}`,
        );
      }
    },
    ledger: () => sandbox.admin.ledger(),
    async stop() {
      await Promise.all(workers.map((w) => w.stop(10_000)));
      client.disconnect();
      await sandbox.stop();
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Every BullMQ transfer job hash of the batch, in any state and round (a job that ran and finished is
 * kept for a day): a held batch must have none.
 */
export async function jobsOfBatch(client: Redis, prefix: string, batchId: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await client.scan(
      cursor,
      'MATCH',
      `${prefix}:transfers-*:${batchId}/*`,
      'COUNT',
      1000,
    );
    cursor = next;
    out.push(...found.filter((key) => !key.endsWith(':lock') && !key.endsWith(':logs')));
  } while (cursor !== '0');
  return out;
}

/** Which of a queue's lists holds a job, for the diagnosis of a stuck transfer. */
export async function jobListOf(client: Redis, queue: string, jobId: string): Promise<string> {
  const [wait, active, delayed, failed, completed, prioritized, exists] = await Promise.all([
    client.lpos(`${queue}:wait`, jobId),
    client.lpos(`${queue}:active`, jobId),
    client.zscore(`${queue}:delayed`, jobId),
    client.zscore(`${queue}:failed`, jobId),
    client.zscore(`${queue}:completed`, jobId),
    client.zscore(`${queue}:prioritized`, jobId),
    client.exists(`${queue}:${jobId}`),
  ]);
  const where = Object.entries({ wait, active, delayed, failed, completed, prioritized })
    .filter(([, v]) => v !== null)
    .map(([k]) => k);
  return `${where.join(',') || 'no list'}${exists ? '' : ' (no job hash)'}`;
}

/**
 * The money invariants every worker test checks against the sandbox's ledger: no row paid twice;
 * every paid row is `submitted` or `needs_review`; a `submitted` row's intent id is the ledger's.
 * Rows are told apart by recipient (each test row has its own).
 */
export function checkLedger(
  doc: BatchStatus,
  ledger: LedgerEntry[],
): { paidTwice: string[]; problems: string[] } {
  const byRecipient = new Map<string, LedgerEntry[]>();
  for (const e of ledger) {
    const key = e.recipient.toLowerCase();
    byRecipient.set(key, [...(byRecipient.get(key) ?? []), e]);
  }
  const paidTwice: string[] = [];
  const problems: string[] = [];
  for (const t of doc.transfers) {
    const paid = byRecipient.get(t.recipient.toLowerCase()) ?? [];
    if (paid.length > 1) {
      paidTwice.push(t.id);
      problems.push(paidTwiceEvidence(t, paid));
    }
    if (paid.length === 1 && t.state !== 'submitted' && t.state !== 'needs_review') {
      problems.push(`${t.id} was paid but is ${t.state}`);
    }
    if (t.state === 'submitted') {
      if (paid.length !== 1) problems.push(`${t.id} is submitted but the ledger has ${paid.length} payments`);
      else if (paid[0]?.intent_id !== t.intent_id) {
        problems.push(`${t.id} records intent ${t.intent_id}, the ledger ${paid[0]?.intent_id}`);
      }
    }
    if (paid.length === 1 && paid[0]?.amount !== undefined) {
      // The ledger keeps base units; the status document decimals.
      const micro = BigInt(paid[0].amount);
      const [w, f = ''] = t.amount.split('.');
      if (micro !== BigInt(w ?? '0') * 1_000_000n + BigInt(f.padEnd(6, '0')))
        problems.push(`${t.id} paid a wrong amount`);
    }
  }
  return { paidTwice, problems };
}

/**
 * What explains a row paid more than once: the transfer as the worker left it (state, intent,
 * attempts, the evidence of its sends) and each payment the sandbox executed for it (its intent,
 * the Idempotency-Key it came under, the source-chain transaction, the permit nonce, when).
 */
function paidTwiceEvidence(t: BatchStatus['transfers'][number], paid: readonly LedgerEntry[]): string {
  const payments = paid.map((e) => ({
    intent_id: e.intent_id,
    idempotency_key: e.idempotency_key,
    tx: e.tx_hash ?? e.tx_signature,
    permit_tx: e.permit_tx_hash,
    nonce: e.nonce,
    amount: e.amount,
    at: new Date(e.at).toISOString(),
  }));
  const row = {
    state: t.state,
    intent_id: t.intent_id,
    attempts: t.attempts,
    error: t.error,
    evidence: t.evidence,
  };
  // One intent paid more than once is the service running the same payload again; several intents
  // are several payloads the worker made for one row.
  const intents = new Set(paid.map((e) => e.intent_id)).size;
  const reading =
    intents === 1
      ? 'one intent executed more than once'
      : `${intents} intents: the worker made ${intents} payloads`;
  return `${t.id} paid ${paid.length}× (${reading}): ${JSON.stringify({ row, payments })}`;
}

/**
 * Keeps what a failed money check saw in test-output/ (the ledger, the status document, the
 * workers' logs), so a failure that does not come back can still be explained; returns the file.
 */
export function keepLedgerEvidence(name: string, evidence: Record<string, unknown>): string {
  const dir = join(REPO_ROOT, 'test-output');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify(evidence, null, 1));
  return file;
}

/**
 * The BullMQ state of each transfer's job (round 0), read through BullMQ's API: `delayed` once a
 * worker ran it and handed it back to wait, `waiting` before any worker took it.
 */
export async function transferJobStates(
  stack: Pick<Stack, 'redis' | 'env'>,
  transfers: readonly { readonly batchId: string; readonly id: string; readonly from: string }[],
): Promise<string[]> {
  const prefix = stack.env['QUEUE_PREFIX'] as string;
  const queues = new Map<string, Queue>();
  try {
    return await Promise.all(
      transfers.map(async (t) => {
        const name = queueNameFor(t.from as Chain);
        const q = queues.get(name) ?? new Queue(name, { connection: { url: stack.redis.url }, prefix });
        queues.set(name, q);
        return await q.getJobState(transferJobId(t.batchId, t.id));
      }),
    );
  } finally {
    await Promise.all([...queues.values()].map((q) => q.close()));
  }
}

/**
 * How many times the workers handed a transfer job back to the queue to wait for `kind` (`paused`,
 * `daily_cap`, …), all chains: the counter behind `usdc_batch_waits_total`, flushed once a second.
 */
export async function waitsCounted(client: Redis, prefix: string, kind: string): Promise<number> {
  const counters = await client.hgetall(metricKeys(prefix).counters);
  return Object.entries(counters)
    .filter(([field]) => field.startsWith('waits|') && field.endsWith(`|${kind}`))
    .reduce((sum, [, v]) => sum + Number(v), 0);
}
