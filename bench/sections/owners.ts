import { keccak256, toHex, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { evmRows } from '../lib/rows.ts';
import { startBenchSandbox, type BenchRedis } from '../lib/stack.ts';
import type { SandboxProcess } from '../../support/sandbox.ts';
import { topCommands } from '../lib/redis-info.ts';
import { median } from '../lib/stats.ts';
import { EVM_CONCURRENCY, REALISTIC_LATENCY_MS, serialSection } from './evm.ts';
import { runProductBatch, type Context, type FlowRun } from './throughput.ts';

/** Owner counts measured (BENCH_OWNER_COUNTS, default 1,2,4,8): one chain, the service at REALISTIC_LATENCY_MS. */
export const OWNER_COUNTS: readonly number[] = (process.env['BENCH_OWNER_COUNTS'] ?? '1,2,4,8')
  .split(',')
  .filter(Boolean)
  .map(Number);
/** Rows per owner in one run: ~20 s at the bound at 200 ms, so start-up weighs little. */
const ROWS_PER_OWNER = 100;

export type OwnersRun = FlowRun & {
  /** Median time between two acceptances of one owner's transfers (the sandbox's ledger), over owners. */
  readonly ownerCycleMs: number;
  /** With one owner: the service's own median time per transfer call (latency + its chain). */
  readonly callMs?: number | undefined;
  /** How many owners the ledger shows paying. */
  readonly ownersPaying: number;
  /**
   * The owners' pace once under way: for each owner, its acceptances after the first per second
   * between its first and its last (the ledger), summed over owners. The batch rate (`perSecond`)
   * also counts the start: the first row's estimate and balance reading before any permit is sent.
   */
  readonly steadyPerSecond?: number | undefined;
  /**
   * Where an owner's cycle goes, from the sandbox's clock (its ledger): the service's own time per
   * transfer call (its request arrived → answered: the latency and the chain), and the worker's gap
   * (an answer → the same owner's next request arriving: everything the worker does between two
   * permits — the outcome, the nonce commit and hand-off, the sending mark, the request). Medians per
   * owner, then over owners.
   */
  readonly serviceMs?: number | undefined;
  readonly workerGapMs?: number | undefined;
  /**
   * The batch's start: the first transfer taken → the first permit's request arriving at the service
   * (the sandbox's clock and the records' are the same machine's): the estimate, USDC's on-chain
   * controls, the owner's balance and nonce, the permit signed and marked.
   */
  readonly startMs?: number | undefined;
  /** Leases handed straight from a committing holder to its preparer, per transfer (the pools' counters). */
  readonly handoffsPerTransfer?: number | undefined;
};

export type OwnersResult = {
  readonly latencyMs: number;
  readonly concurrency: number;
  /** One (chain, owner)'s bound: 1 / transfer-call latency. */
  readonly boundPerOwner: number;
  readonly counts: readonly {
    readonly owners: number;
    readonly rows: number;
    readonly runs: readonly OwnersRun[];
  }[];
  /**
   * The cost of a replica (docs/replicated-redis.md): the same batch with a replica of the run's
   * Redis on loopback and without, runs interleaved, per owner count.
   */
  readonly replica?: readonly ReplicaCost[] | undefined;
  /** One owner served by several worker processes: each bounds itself, the lease arbitrates. */
  readonly processes?:
    { readonly workers: number; readonly rows: number; readonly runs: readonly OwnersRun[] } | undefined;
};

export type ReplicaCost = {
  readonly owners: number;
  readonly rows: number;
  readonly standalone: readonly OwnersRun[];
  readonly replicated: readonly OwnersRun[];
};

/** Owner counts of the replica comparison (BENCH_REPLICA_OWNERS, default 1,4; empty leaves it out). */
const REPLICA_OWNERS: readonly number[] = (process.env['BENCH_REPLICA_OWNERS'] ?? '1,4')
  .split(',')
  .filter(Boolean)
  .map(Number);

/** Worker processes of the several-processes run (one owner; BENCH_OWNER_PROCESSES, 0 leaves it out). */
const PROCESSES = Number(process.env['BENCH_OWNER_PROCESSES'] ?? '3');

type OwnerCycles = {
  readonly startMs: number;
  readonly cycleMs: number;
  readonly owners: number;
  readonly steadyPerSecond: number;
  readonly serviceMs: number;
  readonly workerGapMs: number;
};

/** One owner's calls as the sandbox's ledger saw them, in the order they were answered. */
type Call = { readonly receivedAt: number; readonly at: number };

/**
 * Per owner, the median gap between its consecutive acceptances (the median of those over owners),
 * the owners' steady pace (OwnersRun.steadyPerSecond), and the cycle split into the service's time
 * and the worker's gap (OwnersRun.serviceMs, workerGapMs).
 */
async function ownerCycles(sandbox: SandboxProcess, firstTakenAt: number | undefined): Promise<OwnerCycles> {
  const byOwner = new Map<string, Call[]>();
  let firstRequest = Number.POSITIVE_INFINITY;
  for (const e of await sandbox.admin.ledger()) {
    if (e.kind !== 'evm') continue;
    firstRequest = Math.min(firstRequest, e.received_at);
    byOwner.set(e.owner, [...(byOwner.get(e.owner) ?? []), { receivedAt: e.received_at, at: e.at }]);
  }
  const sorted = [...byOwner.values()].map((calls) => [...calls].sort((a, b) => a.at - b.at));
  const between = (calls: readonly Call[], f: (prev: Call, next: Call) => number) =>
    median(calls.slice(1).map((c, i) => f(calls[i] as Call, c)));
  const steadyPerSecond = sorted.reduce((sum, calls) => {
    const span = (calls.at(-1) as Call).at - (calls[0] as Call).at;
    return calls.length > 1 && span > 0 ? sum + ((calls.length - 1) * 1000) / span : sum;
  }, 0);
  return {
    startMs: firstTakenAt === undefined ? Number.NaN : firstRequest - firstTakenAt,
    cycleMs: median(sorted.map((calls) => between(calls, (prev, next) => next.at - prev.at))),
    owners: byOwner.size,
    steadyPerSecond,
    serviceMs: median(sorted.map((calls) => median(calls.map((c) => c.at - c.receivedAt)))),
    workerGapMs: median(sorted.map((calls) => between(calls, (prev, next) => next.receivedAt - prev.at))),
  };
}

/** Leases handed over on commits, summed over the bench owners' BASE pools. */
async function handoffs(client: BenchRedis['client'], prefix: string, owners: number): Promise<number> {
  const pipe = client.pipeline();
  for (const key of benchOwnerKeys(owners))
    pipe.hget(`${prefix}:nonce:BASE:${privateKeyToAccount(key as Hex).address}`, 'handoffs');
  return ((await pipe.exec()) ?? []).reduce((a, [, v]) => a + Number(v ?? 0), 0);
}

/** Throwaway keys, the same every run (keccak of a label): never funded anywhere but the sandbox. */
export function benchOwnerKeys(n: number): string[] {
  return Array.from({ length: n }, (_, i) => keccak256(toHex(`usdc-batch bench owner ${i}`)));
}

/**
 * 7. Several owners per chain (issue 17): one source chain, the sandbox at REALISTIC_LATENCY_MS,
 * `EVM_PRIVATE_KEY` with 1, 2, 4 and 8 keys. Each owner's permits are serial, the owners' are not:
 * the bound is owners × 1 / latency. Every run checks the sandbox's ledger: each row paid once.
 */
export async function benchOwners(
  ctx: Context,
  p: { runs: number; concurrency?: number },
): Promise<OwnersResult> {
  const concurrency = p.concurrency ?? EVM_CONCURRENCY;
  const sandbox = await startBenchSandbox(REALISTIC_LATENCY_MS);
  const counts: { owners: number; rows: number; runs: OwnersRun[] }[] = [];
  let processes: OwnersResult['processes'];
  let replica: OwnersResult['replica'];
  try {
    const slowCtx: Context = { ...ctx, sandbox };
    for (const owners of OWNER_COUNTS) {
      const rows = evmRows(ROWS_PER_OWNER * owners, ['BASE'], `own${owners}`, 'ARB');
      const env = {
        WORKER_CONCURRENCY: String(concurrency),
        EVM_PRIVATE_KEY: benchOwnerKeys(owners).join(','),
      };
      const runs: OwnersRun[] = [];
      for (let i = 0; i < p.runs; i++) {
        const flow = await runProductBatch(slowCtx, {
          rows,
          workers: 1,
          env,
          name: `owners-${owners}-${i}`,
          inspect: (client, prefix) => handoffs(client, prefix, owners),
        });
        const { commands, inspected, ...r0 } = flow;
        const cycles = await ownerCycles(sandbox, flow.firstTakenAt);
        const serial = owners === 1 ? await serialSection(sandbox, rows.length) : undefined;
        const r: OwnersRun = {
          ...r0,
          ownerCycleMs: cycles.cycleMs,
          ownersPaying: cycles.owners,
          steadyPerSecond: cycles.steadyPerSecond,
          serviceMs: cycles.serviceMs,
          workerGapMs: cycles.workerGapMs,
          startMs: cycles.startMs,
          callMs: serial?.callMs,
          handoffsPerTransfer: (inspected ?? 0) / rows.length,
        };
        runs.push(r);
        ctx.log(
          `owners ${owners}, run ${i + 1}: ${r.perSecond.toFixed(2)}/s (start ${cycles.startMs.toFixed(0)} ms, steady ${cycles.steadyPerSecond.toFixed(2)}/s, cycle ${cycles.cycleMs.toFixed(1)} ms = service ${cycles.serviceMs.toFixed(1)} + worker gap ${cycles.workerGapMs.toFixed(1)}; bound ${((owners * 1000) / REALISTIC_LATENCY_MS).toFixed(0)}/s), handed over ${(r.handoffsPerTransfer ?? 0).toFixed(2)}; per transfer: ${topCommands(commands, rows.length, 12)}`,
        );
      }
      counts.push({ owners, rows: rows.length, runs });
    }
    if (REPLICA_OWNERS.length > 0) replica = await replicaCosts(slowCtx, p.runs, concurrency);
    if (PROCESSES > 0) processes = await oneOwnerManyProcesses(slowCtx, p.runs, concurrency);
  } finally {
    await sandbox.close();
  }
  return {
    latencyMs: REALISTIC_LATENCY_MS,
    concurrency,
    boundPerOwner: 1000 / REALISTIC_LATENCY_MS,
    counts,
    replica,
    processes,
  };
}

/**
 * The same batch on a standalone Redis and on one with a replica (every send then waits for the
 * replica's acknowledgement), alternated so that a drift of the machine weighs on both alike.
 */
async function replicaCosts(ctx: Context, runs: number, concurrency: number): Promise<ReplicaCost[]> {
  const out: ReplicaCost[] = [];
  for (const owners of REPLICA_OWNERS) {
    const rows = evmRows(ROWS_PER_OWNER * owners, ['BASE'], `rep${owners}`, 'ARB');
    const env = {
      WORKER_CONCURRENCY: String(concurrency),
      EVM_PRIVATE_KEY: benchOwnerKeys(owners).join(','),
    };
    const standalone: OwnersRun[] = [];
    const replicated: OwnersRun[] = [];
    for (let i = 0; i < runs; i++) {
      for (const withReplica of [false, true]) {
        const flow = await runProductBatch(ctx, {
          rows,
          workers: 1,
          env,
          name: `replica-${owners}-${withReplica ? 'r' : 's'}${i}`,
          replica: withReplica,
        });
        const { commands, inspected: _inspected, ...r0 } = flow;
        const cycles = await ownerCycles(ctx.sandbox, flow.firstTakenAt);
        const r: OwnersRun = {
          ...r0,
          ownerCycleMs: cycles.cycleMs,
          ownersPaying: cycles.owners,
          steadyPerSecond: cycles.steadyPerSecond,
          serviceMs: cycles.serviceMs,
          workerGapMs: cycles.workerGapMs,
        };
        (withReplica ? replicated : standalone).push(r);
        ctx.log(
          `owners ${owners} ${withReplica ? 'with a replica' : 'standalone'}, run ${i + 1}: steady ${cycles.steadyPerSecond.toFixed(2)}/s, worker gap ${cycles.workerGapMs.toFixed(1)} ms, ${r.commandsPerTransfer.toFixed(1)} commands per transfer; ${topCommands(commands, rows.length, 8)}`,
        );
      }
    }
    out.push({ owners, rows: rows.length, standalone, replicated });
  }
  return out;
}

/** One owner, PROCESSES worker processes of `concurrency` each: more jobs wait for the one lease. */
async function oneOwnerManyProcesses(
  ctx: Context,
  runs: number,
  concurrency: number,
): Promise<NonNullable<OwnersResult['processes']>> {
  const rows = evmRows(ROWS_PER_OWNER, ['BASE'], 'own1p', 'ARB');
  const env = { WORKER_CONCURRENCY: String(concurrency), EVM_PRIVATE_KEY: benchOwnerKeys(1).join(',') };
  const out: OwnersRun[] = [];
  for (let i = 0; i < runs; i++) {
    const flow = await runProductBatch(ctx, { rows, workers: PROCESSES, env, name: `owners-1-p${i}` });
    const { commands, inspected: _inspected, ...r0 } = flow;
    const cycles = await ownerCycles(ctx.sandbox, flow.firstTakenAt);
    out.push({ ...r0, ownerCycleMs: cycles.cycleMs, ownersPaying: cycles.owners });
    ctx.log(
      `owners 1, ${PROCESSES} processes, run ${i + 1}: ${r0.perSecond.toFixed(2)}/s; per transfer: ${topCommands(commands, rows.length, 12)}`,
    );
  }
  return { workers: PROCESSES, rows: rows.length, runs: out };
}
