import type { Redis } from 'ioredis';
import { keys } from '../../src/store/keys.ts';
import { TEST_EVM_ADDRESS } from '../../support/fixtures.ts';
import type { SandboxProcess } from '../../support/sandbox.ts';
import { coreSplit, type CoreSplit } from '../lib/cpu-affinity.ts';
import { evmRows } from '../lib/rows.ts';
import { mean, median } from '../lib/stats.ts';
import { startBenchSandbox } from '../lib/stack.ts';
import { workerGaps, type WorkerGaps } from '../lib/worker-gaps.ts';
import { runProductBatch, type Context, type FlowRun } from './throughput.ts';

export const EVM_CONCURRENCY = 64;
const SOURCES = ['ETH', 'BASE', 'ARB', 'POLYGON'] as const;
/** A transfer call that submits on chain takes hundreds of ms: the one-owner flow is measured there too. */
export const REALISTIC_LATENCY_MS = 200;
const REALISTIC_ROWS = 100;

/**
 * The serial section of one (chain, owner), from the sandbox's own log: when each transfer request
 * arrived and when the service accepted it (its ledger entry). One owner's calls are serial, so the
 * i-th request is the i-th acceptance (no refusals in these runs; otherwise this is left out).
 */
export type SerialSection = {
  /** Median time the service spent on one transfer call, arrival → accepted (latency + the chain). */
  readonly callMs: number;
  /**
   * Mean time per call (Σ call time ÷ calls): the bound's. Calls one at a time can go no faster than
   * 1 ÷ this even with no gap between them; 1 ÷ the median can be out of reach when some calls take long.
   */
  readonly meanCallMs?: number | undefined;
  /** Median time from one acceptance to the next request's arrival: the worker's serial section. */
  readonly gapMs: number;
  /** Median arrival → next arrival. */
  readonly cycleMs: number;
  /** Σ call time / (first arrival → last acceptance): how busy the serial section kept the service. */
  readonly busy: number;
};

/** How the run's transfers reached the service: through a prepared permit handed over, or not. */
export type PreparedCount = {
  /** Transfers whose permit was prepared while the one before it was in flight. */
  readonly prepared: number;
  /** Leases handed straight from a committing holder to its preparer (the pools' counters). */
  readonly handoffs: number;
};

/**
 * One source chain's serial section inside a run of several chains, from the sandbox's ledger (its
 * `received_at` and `at` per permit): the service's own time per call *in that run* — its chain and
 * the sandbox sharing the machine with the other chains and the worker — and the gap the worker left.
 */
export type ChainSerial = {
  readonly chain: string;
  readonly calls: number;
  /** Median arrival → accepted of this chain's transfer calls. */
  readonly callMs: number;
  /** Mean arrival → accepted (Σ ÷ calls): the bound's, as SerialSection's. */
  readonly meanCallMs?: number | undefined;
  /** Median acceptance → the next request of this chain's owner arriving: the serial section outside the service. */
  readonly gapMs: number;
  /** Σ call time ÷ (first arrival → last acceptance) on this chain. */
  readonly busy: number;
  /** The worker's own part of the gap, from its job logs (bench/lib/worker-gaps.ts); absent in older results. */
  readonly workerGapMs?: number | undefined;
};

export type EvmRun = FlowRun & {
  readonly serial?: SerialSection | undefined;
  readonly prepared?: PreparedCount | undefined;
  /** Four chains at once: each chain's serial section in the run; absent in older results. */
  readonly chains?: readonly ChainSerial[] | undefined;
  /** One (chain, owner): the worker's own part of the gap (bench/lib/worker-gaps.ts); absent in older results. */
  readonly workerGapMs?: number | undefined;
};

/** What a run's Redis tells once its batch is complete. */
type Inspected = { readonly prepared: PreparedCount; readonly gaps: WorkerGaps };

export type EvmResult = {
  readonly latencyMs: number;
  readonly concurrency: number;
  readonly oneChain: { readonly rows: number; readonly bound: number; readonly runs: readonly EvmRun[] };
  readonly fourChains: { readonly rows: number; readonly bound: number; readonly runs: readonly EvmRun[] };
  /**
   * The same four-chain batch with the worker and Redis on `cores.product` and the sandbox and its
   * anvils on `cores.sandbox` (bench/lib/cpu-affinity.ts); absent where cores cannot be split.
   */
  readonly fourChainsOwnCores?: { readonly cores: CoreSplit; readonly runs: readonly EvmRun[] } | undefined;
  /** One (chain, owner) against a second sandbox at a service-like latency; absent in older results. */
  readonly oneChainRealistic?:
    | {
        readonly latencyMs: number;
        readonly rows: number;
        readonly bound: number;
        readonly runs: readonly EvmRun[];
      }
    | undefined;
};

export async function serialSection(
  sandbox: SandboxProcess,
  rows: number,
): Promise<SerialSection | undefined> {
  const arrivals = (await sandbox.admin.requests()).filter((r) => r.op === 'transfer').map((r) => r.at);
  const accepted = (await sandbox.admin.ledger()).filter((e) => e.kind === 'evm').map((e) => e.at);
  if (arrivals.length !== rows || accepted.length !== rows) return undefined;
  const calls = arrivals.map((a, i) => (accepted[i] as number) - a);
  const gaps = arrivals.slice(1).map((a, i) => a - (accepted[i] as number));
  const cycles = arrivals.slice(1).map((a, i) => a - (arrivals[i] as number));
  const span = (accepted.at(-1) as number) - (arrivals[0] as number);
  return {
    callMs: median(calls),
    meanCallMs: mean(calls),
    gapMs: median(gaps),
    cycleMs: median(cycles),
    busy: calls.reduce((a, b) => a + b, 0) / span,
  };
}

/** Each source chain's serial section in the run just finished (the sandbox's ledger, one owner per chain). */
export async function chainSerials(sandbox: SandboxProcess): Promise<ChainSerial[]> {
  const byChain = new Map<string, { receivedAt: number; at: number }[]>();
  for (const e of await sandbox.admin.ledger()) {
    if (e.kind !== 'evm') continue;
    byChain.set(e.from, [...(byChain.get(e.from) ?? []), { receivedAt: e.received_at, at: e.at }]);
  }
  return [...byChain].map(([chain, unsorted]) => {
    const calls = [...unsorted].sort((a, b) => a.at - b.at);
    const took = calls.map((c) => c.at - c.receivedAt);
    const span = (calls.at(-1)?.at ?? 0) - (calls[0]?.receivedAt ?? 0);
    return {
      chain,
      calls: calls.length,
      callMs: median(took),
      meanCallMs: mean(took),
      gapMs: median(calls.slice(1).map((c, i) => c.receivedAt - (calls[i]?.at ?? 0))),
      busy: span > 0 ? took.reduce((a, b) => a + b, 0) / span : Number.NaN,
    };
  });
}

function evmRun(
  r: FlowRun & { readonly inspected: Inspected | undefined },
  serial: SerialSection | undefined,
  chains?: readonly ChainSerial[],
): EvmRun {
  const { inspected, ...run } = r;
  const gaps = inspected?.gaps;
  return {
    ...run,
    serial,
    prepared: inspected?.prepared,
    chains: chains?.map((c) => ({ ...c, workerGapMs: gaps?.get(c.chain)?.gapMs })),
    workerGapMs: chains ? undefined : gaps?.values().next().value?.gapMs,
  };
}

/** The prepared count and the worker's own gaps of a run on `chains` (one owner per chain). */
function inspectRun(chains: readonly string[]) {
  const prepared = countPrepared(chains);
  return async (client: Redis, prefix: string, batchId: string): Promise<Inspected> => ({
    prepared: await prepared(client, prefix, batchId),
    gaps: await workerGaps(client, prefix, batchId, chains),
  });
}

/** Counts the batch's prepared transfers and the hand-offs of the owner's pools on `chains`. */
function countPrepared(chains: readonly string[]) {
  return async (client: Redis, prefix: string, batchId: string): Promise<PreparedCount> => {
    const k = keys(prefix);
    const ids = await client.zrange(k.batchRows(batchId), 0, -1);
    const pipe = client.pipeline();
    for (const id of ids) pipe.hget(k.transfer(batchId, id), 'prepared_at');
    for (const c of chains) pipe.hget(`${prefix}:nonce:${c}:${TEST_EVM_ADDRESS}`, 'handoffs');
    const res = ((await pipe.exec()) ?? []).map(([, v]) => v as string | null);
    return {
      prepared: res.slice(0, ids.length).filter((v) => Boolean(v)).length,
      handoffs: res.slice(ids.length).reduce((a, v) => a + Number(v ?? 0), 0),
    };
  };
}

/**
 * 3. EVM-source rows. Permits of one (chain, owner) are sent one at a time in nonce order (docs/promises.md, promise 4), so one chain can do at most 1 / (transfer-call latency) per second whatever the
 * concurrency; four source chains have four independent nonce sequences. The one-owner flow is also
 * run against a sandbox at REALISTIC_LATENCY_MS. The sandbox's own log gives the time each transfer
 * call took at the service (the latency plus its chain's execution) and the gap the worker left
 * between one acceptance and the next request.
 */
export async function benchEvm(
  ctx: Context,
  p: { rowsOneChain: number; rowsPerChain: number; runs: number; latencyMs: number; concurrency?: number },
): Promise<EvmResult> {
  const one = evmRows(p.rowsOneChain, ['BASE'], 'evm1', 'ARB');
  const four = evmRows(p.rowsPerChain * SOURCES.length, SOURCES, 'evm4');
  const concurrency = p.concurrency ?? EVM_CONCURRENCY;
  const env = { WORKER_CONCURRENCY: String(concurrency) };
  const oneRuns: EvmRun[] = [];
  const fourRuns: EvmRun[] = [];
  const ownCoresRuns: EvmRun[] = [];
  const cores = coreSplit();
  for (let i = 0; i < p.runs; i++) {
    const a = await runProductBatch(ctx, {
      rows: one,
      workers: 1,
      env,
      name: `evm-one-${i}`,
      inspect: inspectRun(['BASE']),
    });
    oneRuns.push(evmRun(a, await serialSection(ctx.sandbox, one.length)));
    const b = await runProductBatch(ctx, {
      rows: four,
      workers: 1,
      env,
      name: `evm-four-${i}`,
      inspect: inspectRun(SOURCES),
    });
    const chains = await chainSerials(ctx.sandbox);
    fourRuns.push(evmRun(b, undefined, chains));
    if (cores) {
      const c = await runProductBatch(ctx, {
        rows: four,
        workers: 1,
        env,
        name: `evm-four-split-${i}`,
        inspect: inspectRun(SOURCES),
        cores,
      });
      const split = await chainSerials(ctx.sandbox);
      ownCoresRuns.push(evmRun(c, undefined, split));
      ctx.log(
        `evm run ${i + 1}, four chains, worker and Redis on cores ${cores.product}, sandbox and anvils on ${cores.sandbox}: ${c.perSecond.toFixed(1)}/s (per chain: ${split.map((x) => `${x.chain} service ${x.meanCallMs?.toFixed(1)} ms mean, gap ${x.gapMs} ms, busy ${x.busy.toFixed(2)}`).join('; ')})`,
      );
    }
    ctx.log(
      `evm run ${i + 1}: one chain ${a.perSecond.toFixed(1)}/s (service ${oneRuns.at(-1)?.serial?.callMs} ms per call, gap ${oneRuns.at(-1)?.serial?.gapMs} ms, worker ${oneRuns.at(-1)?.workerGapMs} ms), four chains ${b.perSecond.toFixed(1)}/s (per chain: ${chains.map((c) => `${c.chain} service ${c.callMs} ms, gap ${c.gapMs} ms (worker ${b.inspected?.gaps.get(c.chain)?.gapMs} ms), busy ${c.busy.toFixed(2)}`).join('; ')})`,
    );
  }

  const slowRows = evmRows(Math.min(REALISTIC_ROWS, p.rowsOneChain), ['BASE'], 'evm1slow', 'ARB');
  const slowRuns: EvmRun[] = [];
  const slow = await startBenchSandbox(REALISTIC_LATENCY_MS);
  try {
    const slowCtx: Context = { ...ctx, sandbox: slow };
    for (let i = 0; i < p.runs; i++) {
      const r = await runProductBatch(slowCtx, {
        rows: slowRows,
        workers: 1,
        env,
        name: `evm-one-slow-${i}`,
        inspect: inspectRun(['BASE']),
      });
      const serial = await serialSection(slow, slowRows.length);
      slowRuns.push(evmRun(r, serial));
      ctx.log(
        `evm run ${i + 1} at ${REALISTIC_LATENCY_MS} ms: one chain ${r.perSecond.toFixed(2)}/s (service ${serial?.callMs} ms per call, gap ${serial?.gapMs} ms, worker ${slowRuns.at(-1)?.workerGapMs} ms)`,
      );
    }
  } finally {
    await slow.close();
  }

  const perChain = 1000 / p.latencyMs;
  return {
    latencyMs: p.latencyMs,
    concurrency,
    oneChain: { rows: one.length, bound: perChain, runs: oneRuns },
    fourChains: { rows: four.length, bound: perChain * SOURCES.length, runs: fourRuns },
    ...(cores ? { fourChainsOwnCores: { cores, runs: ownCoresRuns } } : {}),
    oneChainRealistic: {
      latencyMs: REALISTIC_LATENCY_MS,
      rows: slowRows.length,
      bound: 1000 / REALISTIC_LATENCY_MS,
      runs: slowRuns,
    },
  };
}
