import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import type { Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { isEvmChain, type Chain } from '../../src/domain/chains.ts';
import { metricKeys } from '../../src/metrics/worker-metrics.ts';
import { queueNameFor } from '../../src/queue/jobs.ts';
import type { SandboxConfigPatch } from '../../src/sandbox/sandbox-config.ts';
import type { Row } from '../../support/fixtures.ts';
import { REPO_ROOT } from '../../support/cli.ts';
import type { SandboxProcess } from '../../support/sandbox.ts';
import { trackChild } from '../lib/cleanup.ts';
import { cpuMsOf } from '../lib/cpu.ts';
import { allCores, pinTree, type CoreSplit } from '../lib/cpu-affinity.ts';
import { traceCommands } from '../lib/command-trace.ts';
import type { Diagnostics } from '../lib/options.ts';
import { cpuSpent, readCpu, type CpuAccount } from '../lib/process-cpu.ts';
import { commandCalls, info, readEvents, totalCalls } from '../lib/redis-info.ts';
import {
  batchOutcome,
  enqueueFile,
  productEnv,
  startBenchRedis,
  startWorkers,
  waitBatchComplete,
  writeCsv,
  type BenchRedis,
  type WorkerGroup,
} from '../lib/stack.ts';

const RAW_SOLANA_WORKER = fileURLToPath(new URL('../raw/solana-worker.ts', import.meta.url));

export type FlowRun = {
  readonly perSecond: number;
  readonly windowMs: number;
  /** When the window began: the first transfer taken (epoch ms); absent for raw runs. */
  readonly firstTakenAt?: number | undefined;
  /** Redis commands per transfer while the batch ran (INFO commandstats; Lua-internal calls included). */
  readonly commandsPerTransfer: number;
  /** Lua script invocations (EVAL/EVALSHA/FCALL) per transfer: each is one round trip. */
  readonly scriptsPerTransfer: number;
  /**
   * Redis read events per transfer while the batch ran (readEvents): the round trips of every client,
   * the bench's own polls and INFO reads included (~10 a second); absent in older results.
   */
  readonly roundTripsPerTransfer?: number | undefined;
  /** CPU (user + sys) per transfer, ms, of each process while the batch ran. */
  readonly cpuMsPerTransfer: { readonly worker: number; readonly sandbox: number; readonly redis: number };
  /**
   * Jobs handed back to the queue (moved to delayed) per transfer, by reason (the workers' `waits`
   * counters): a job waiting for a nonce lease that cycles through BullMQ shows here. Absent for raw runs.
   */
  readonly handedBackPerTransfer?: Readonly<Record<string, number>> | undefined;
  /** Where the interval's CPU went, by process, and the machine's rest (process-cpu.ts); absent in older results. */
  readonly cpu?: CpuAccount | undefined;
};

export type Context = {
  readonly sandbox: SandboxProcess;
  readonly solanaKeyFile: string;
  readonly dir: string;
  readonly log: (s: string) => void;
  /** BENCH_WORKER_NODE_OPTIONS, BENCH_LOG_COMMANDS, BENCH_BATCH_TRACE_FILE, BENCH_SETTLE_NOW (options.ts). */
  readonly diagnostics?: Diagnostics;
  /** The section's sandbox settings, applied after the reset before each run (resetSandbox). */
  readonly sandboxSettings?: SandboxConfigPatch;
};

async function redisCpuMs(redis: BenchRedis): Promise<number> {
  const cpu = await info(redis.client, 'cpu');
  return (Number(cpu.get('used_cpu_user')) + Number(cpu.get('used_cpu_sys'))) * 1000;
}

/** Waits until `n` worker processes are taking jobs from `queueName` (BullMQ names its worker clients). */
async function waitWorkersReady(
  url: string,
  prefix: string,
  queueName: string,
  n: number,
  group: WorkerGroup,
) {
  const queue = new Queue(queueName, { connection: { url }, prefix });
  queue.on('error', () => {});
  try {
    const deadline = Date.now() + 60_000;
    while ((await queue.getWorkersCount()) < n) {
      if (Date.now() > deadline)
        throw new Error(`workers not ready after 60 s:\n${group.output().slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    await queue.close();
  }
}

function scriptCalls(calls: Map<string, number>): number {
  let n = 0;
  for (const [name, v] of calls) if (/^(eval|evalsha|eval_ro|evalsha_ro|fcall|fcall_ro)$/.test(name)) n += v;
  return n;
}

/**
 * A fresh sandbox for a run, with the section's settings (Context.sandboxSettings) applied again: a
 * reset brings back the configuration the sandbox started with. With BENCH_SETTLE_NOW=1 it pays each
 * intent when submitted.
 */
async function resetSandbox(ctx: Context): Promise<void> {
  await ctx.sandbox.admin.reset();
  const patch = { ...ctx.sandboxSettings, ...(ctx.diagnostics?.settleNow ? { statusStepMs: 0 } : {}) };
  if (Object.keys(patch).length > 0) await ctx.sandbox.admin.configure(patch);
}

/**
 * The run's EVM owners funded on the rows' source chains before the worker starts, as a treasury
 * is before its payroll: otherwise the sandbox funds an owner when its balance is first read, and
 * the batch's start would include a reading that shows it empty (docs/sandbox.md).
 */
async function fundOwners(ctx: Context, env: Record<string, string>, rows: readonly Row[]): Promise<void> {
  const keys = (env['EVM_PRIVATE_KEY'] ?? '').split(',').filter(Boolean);
  const chains = [...new Set(rows.map((r) => r.from))].filter(isEvmChain);
  const { treasuryBalance } = await ctx.sandbox.admin.config();
  for (const chain of chains) {
    for (const key of keys) {
      await ctx.sandbox.admin.setBalance(chain, privateKeyToAccount(key as Hex).address, treasuryBalance);
    }
  }
}

/** BENCH_LOG_COMMANDS=1: each command's calls per transfer, most first, and the sandbox's requests. */
async function logCommands(
  ctx: Context,
  name: string,
  calls: Map<string, number>,
  rows: number,
): Promise<void> {
  const parts = [...calls].sort((a, b) => b[1] - a[1]).map(([c, n]) => `${c} ${(n / rows).toFixed(2)}`);
  ctx.log(`${name} commands per transfer: ${parts.join(', ')}`);
  const ops = new Map<string, number>();
  for (const r of await ctx.sandbox.admin.requests()) ops.set(r.op, (ops.get(r.op) ?? 0) + 1);
  ctx.log(`${name} sandbox requests: ${[...ops].map(([o, n]) => `${o} ${n}`).join(', ')}`);
}

/**
 * One batch through `usdc-batch worker` process(es): a fresh durable Redis, the CSV enqueued through
 * the CLI, then `workers` processes started; throughput over the records' own window (first
 * transfer taken → batch complete). Checks that every row was submitted and paid exactly once.
 */
export async function runProductBatch<T = undefined>(
  ctx: Context,
  p: {
    rows: readonly Row[];
    workers: number;
    env?: Record<string, string>;
    name: string;
    timeoutMs?: number;
    /** Reads what the section needs from the run's Redis once the batch is complete (before it stops). */
    inspect?: (client: BenchRedis['client'], prefix: string, batchId: string) => Promise<T>;
    /** A replica of the run's Redis on loopback (the worker waits for it before every send). */
    replica?: boolean;
    /** The worker and Redis on `product`'s cores, the sandbox and its chains on `sandbox`'s, for the run. */
    cores?: CoreSplit | undefined;
  },
): Promise<FlowRun & { commands: Map<string, number>; inspected: T | undefined }> {
  const redis = await startBenchRedis(undefined, { replica: p.replica === true });
  const workers: { stop(): Promise<void> }[] = [];
  try {
    await resetSandbox(ctx);
    const prefix = 'usdc';
    const env = productEnv({
      redisUrl: redis.url,
      prefix,
      sandbox: ctx.sandbox,
      solanaKeyFile: ctx.solanaKeyFile,
      ...(p.env ? { extra: p.env } : {}),
    });
    await fundOwners(ctx, env, p.rows);
    const file = writeCsv(ctx.dir, `${p.name}.csv`, p.rows);
    const { batchId } = await enqueueFile(file, env);
    await redis.client.config('RESETSTAT');
    const traceTo = ctx.diagnostics?.batchTraceFile;
    const tracer = traceTo ? await traceCommands(redis.url, prefix, `${traceTo}.${p.name}`, []) : undefined;
    const nodeOptions = ctx.diagnostics?.workerNodeOptions;
    const group = startWorkers(p.workers, nodeOptions ? { ...env, NODE_OPTIONS: nodeOptions } : env);
    workers.push(group);
    if (p.cores) splitCores(p.cores, ctx, [...redis.pids(), ...group.processes.map((w) => w.child.pid)]);
    // CPU is counted from the moment every worker takes jobs: Node's start-up is not per transfer.
    const from = (p.rows[0] as Row).from;
    await waitWorkersReady(redis.url, prefix, queueNameFor(from as Chain), p.workers, group);
    const pids = group.processes.map((w) => w.child.pid);
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    const processes = { workers: pids, sandbox: ctx.sandbox.child.pid, redis: redis.pids() };
    const cpu0 = {
      worker: sum(pids.map(cpuMsOf)),
      sandbox: cpuMsOf(ctx.sandbox.child.pid),
      redis: await redisCpuMs(redis),
    };
    const reads0 = await readEvents(redis.client);
    const reading0 = readCpu(processes);
    await waitBatchComplete(redis.client, prefix, batchId, group, p.timeoutMs ?? 600_000);
    const reading1 = readCpu(processes);
    const reads1 = await readEvents(redis.client);
    const cpu1 = {
      worker: sum(pids.map(cpuMsOf)),
      sandbox: cpuMsOf(ctx.sandbox.child.pid),
      redis: await redisCpuMs(redis),
    };
    await tracer?.stop();
    const calls = await commandCalls(redis.client);
    if (ctx.diagnostics?.logCommands) await logCommands(ctx, p.name, calls, p.rows.length);
    const outcome = await batchOutcome(redis.client, prefix, batchId);
    const inspected = p.inspect ? await p.inspect(redis.client, prefix, batchId) : undefined;
    await group.stop();
    // Read once the workers stopped: they flush their counters on close (worker-metrics.ts).
    const handedBack = await handedBackPerTransfer(redis.client, prefix, p.rows.length);
    if (outcome.notSubmitted > 0) {
      throw new Error(`${p.name}: ${outcome.notSubmitted} of ${outcome.rows} transfers were not submitted`);
    }
    await checkPaidOnce(ctx.sandbox, p.rows.length, p.name);
    return {
      perSecond: outcome.perSecond,
      windowMs: outcome.windowMs,
      firstTakenAt: outcome.firstTakenAt,
      commandsPerTransfer: totalCalls(calls) / p.rows.length,
      scriptsPerTransfer: scriptCalls(calls) / p.rows.length,
      roundTripsPerTransfer: (reads1 - reads0) / p.rows.length,
      cpuMsPerTransfer: {
        worker: (cpu1.worker - cpu0.worker) / p.rows.length,
        sandbox: (cpu1.sandbox - cpu0.sandbox) / p.rows.length,
        redis: (cpu1.redis - cpu0.redis) / p.rows.length,
      },
      handedBackPerTransfer: handedBack,
      cpu: cpuSpent(reading0, reading1, p.rows.length),
      commands: calls,
      inspected,
    };
  } finally {
    if (p.cores) sandboxOnEveryCore(ctx);
    for (const w of workers) await w.stop();
    await redis.stop();
  }
}

/** The product's processes on `cores.product`, the sandbox and its chains on `cores.sandbox`. */
function splitCores(cores: CoreSplit, ctx: Context, product: readonly (number | undefined)[]): void {
  const sandbox = ctx.sandbox.child.pid;
  if (sandbox !== undefined) pinTree(sandbox, cores.sandbox);
  for (const pid of product) if (pid !== undefined) pinTree(pid, cores.product);
}

/** The sandbox and its chains back on every core after a split run (the product's processes end with it). */
function sandboxOnEveryCore(ctx: Context): void {
  const sandbox = ctx.sandbox.child.pid;
  if (sandbox !== undefined) pinTree(sandbox, allCores());
}

/** The workers' `waits|<CHAIN>|<kind>` counters (worker-metrics.ts), summed over chains, per transfer. */
async function handedBackPerTransfer(
  client: BenchRedis['client'],
  prefix: string,
  transfers: number,
): Promise<Record<string, number>> {
  const counters = await client.hgetall(metricKeys(prefix).counters);
  const out: Record<string, number> = {};
  for (const [field, value] of Object.entries(counters)) {
    const m = /^waits\|[^|]+\|(.+)$/.exec(field);
    if (m) out[m[1] as string] = (out[m[1] as string] ?? 0) + Number(value) / transfers;
  }
  return out;
}

export async function checkPaidOnce(sandbox: SandboxProcess, rows: number, name: string): Promise<void> {
  const ledger = await sandbox.admin.ledger();
  const recipients = new Set(ledger.map((e) => e.recipient.toLowerCase()));
  if (ledger.length !== rows || recipients.size !== rows) {
    throw new Error(
      `${name}: the sandbox ledger has ${ledger.length} payments to ${recipients.size} recipients for ${rows} rows`,
    );
  }
}

/**
 * The raw BullMQ worker (bench/raw/solana-worker.ts) on the same rows: jobs added with `addBulk`
 * (not timed), then the worker process runs until every job finished.
 */
export async function runRawSolanaBatch(
  ctx: Context,
  p: { rows: readonly Row[]; concurrency: number; timeoutMs?: number },
): Promise<FlowRun> {
  const redis = await startBenchRedis();
  try {
    await resetSandbox(ctx);
    const prefix = 'raw';
    const queue = new Queue('raw-solana', { connection: { url: redis.url }, prefix });
    queue.on('error', () => {});
    for (let i = 0; i < p.rows.length; i += 1000) {
      await queue.addBulk(
        p.rows.slice(i, i + 1000).map((r) => ({
          name: 'transfer',
          data: { to: r.to, amount: r.amount, recipient: r.recipient },
          opts: { jobId: `raw/${r.id}`, removeOnComplete: { age: 24 * 3600 } },
        })),
      );
    }
    await queue.close();
    await redis.client.config('RESETSTAT');
    const sandbox0 = cpuMsOf(ctx.sandbox.child.pid);
    const redis0 = await redisCpuMs(redis);
    const reads0 = await readEvents(redis.client);
    const processes = {
      workers: [],
      sandbox: ctx.sandbox.child.pid,
      redis: redis.pids(),
      workerReapedByBench: true,
    };
    const reading0 = readCpu(processes);
    const child = spawn(process.execPath, [RAW_SOLANA_WORKER], {
      cwd: REPO_ROOT,
      env: {
        PATH: process.env['PATH'],
        REDIS_URL: redis.url,
        QUEUE_PREFIX: prefix,
        QUEUE: 'raw-solana',
        TRANSFER_API_URL: ctx.sandbox.url,
        TRANSFER_API_KEY: ctx.sandbox.api_key,
        SOLANA_KEYPAIR_FILE: ctx.solanaKeyFile,
        CONCURRENCY: String(p.concurrency),
        EXPECT: String(p.rows.length),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    trackChild(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-5000)));
    const timer = setTimeout(() => child.kill('SIGKILL'), p.timeoutMs ?? 600_000);
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    clearTimeout(timer);
    const reading1 = readCpu(processes);
    const calls = await commandCalls(redis.client);
    const sandbox1 = cpuMsOf(ctx.sandbox.child.pid);
    const redis1 = await redisCpuMs(redis);
    const reads1 = await readEvents(redis.client);
    if (code !== 0) throw new Error(`raw worker exited ${code}: ${stderr}`);
    const r = JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as {
      first: number;
      last: number;
      done: number;
      failed: number;
      cpuMs: number;
    };
    if (r.done !== p.rows.length)
      throw new Error(`raw worker: ${r.failed} of ${p.rows.length} jobs failed: ${stderr}`);
    await checkPaidOnce(ctx.sandbox, p.rows.length, 'raw solana');
    const windowMs = r.last - r.first;
    return {
      perSecond: (r.done / windowMs) * 1000,
      windowMs,
      commandsPerTransfer: totalCalls(calls) / p.rows.length,
      scriptsPerTransfer: scriptCalls(calls) / p.rows.length,
      roundTripsPerTransfer: (reads1 - reads0) / p.rows.length,
      cpuMsPerTransfer: {
        worker: r.cpuMs / p.rows.length,
        sandbox: (sandbox1 - sandbox0) / p.rows.length,
        redis: (redis1 - redis0) / p.rows.length,
      },
      cpu: cpuSpent(reading0, reading1, p.rows.length),
    };
  } finally {
    await redis.stop();
  }
}
