import { evmRows } from '../lib/rows.ts';
import { startBenchSandbox } from '../lib/stack.ts';
import { runProductBatch, type Context, type FlowRun } from './throughput.ts';

export const EVM_CONCURRENCY = 64;
const SOURCES = ['ETH', 'BASE', 'ARB', 'POLYGON'] as const;
/** A transfer call that submits on chain takes hundreds of ms: the one-owner flow is measured there too. */
export const REALISTIC_LATENCY_MS = 200;
const REALISTIC_ROWS = 100;

export type EvmResult = {
  readonly latencyMs: number;
  readonly concurrency: number;
  readonly oneChain: { readonly rows: number; readonly bound: number; readonly runs: readonly FlowRun[] };
  readonly fourChains: { readonly rows: number; readonly bound: number; readonly runs: readonly FlowRun[] };
  /** One (chain, owner) against a second sandbox at a service-like latency; absent in older results. */
  readonly oneChainRealistic?:
    | {
        readonly latencyMs: number;
        readonly rows: number;
        readonly bound: number;
        readonly runs: readonly FlowRun[];
      }
    | undefined;
};

/**
 * 3. EVM-source rows. Permits of one (chain, owner) are sent one at a time in nonce order (PRODUCT.md
 * §5 promise 4), so one chain can do at most 1 / (transfer-call latency) per second whatever the
 * concurrency; four source chains have four independent nonce sequences. The one-owner flow is also
 * run against a sandbox at REALISTIC_LATENCY_MS, where the serial overhead around each call weighs less.
 */
export async function benchEvm(
  ctx: Context,
  p: { rowsOneChain: number; rowsPerChain: number; runs: number; latencyMs: number; concurrency?: number },
): Promise<EvmResult> {
  const one = evmRows(p.rowsOneChain, ['BASE'], 'evm1', 'ARB');
  const four = evmRows(p.rowsPerChain * SOURCES.length, SOURCES, 'evm4');
  const concurrency = p.concurrency ?? EVM_CONCURRENCY;
  const env = { WORKER_CONCURRENCY: String(concurrency) };
  const oneRuns: FlowRun[] = [];
  const fourRuns: FlowRun[] = [];
  for (let i = 0; i < p.runs; i++) {
    const a = await runProductBatch(ctx, { rows: one, workers: 1, env, name: `evm-one-${i}` });
    oneRuns.push(a);
    const b = await runProductBatch(ctx, { rows: four, workers: 1, env, name: `evm-four-${i}` });
    fourRuns.push(b);
    ctx.log(
      `evm run ${i + 1}: one chain ${a.perSecond.toFixed(1)}/s, four chains ${b.perSecond.toFixed(1)}/s`,
    );
  }

  const slowRows = evmRows(Math.min(REALISTIC_ROWS, p.rowsOneChain), ['BASE'], 'evm1slow', 'ARB');
  const slowRuns: FlowRun[] = [];
  const slow = await startBenchSandbox(REALISTIC_LATENCY_MS);
  try {
    const slowCtx: Context = { ...ctx, sandbox: slow };
    for (let i = 0; i < p.runs; i++) {
      const r = await runProductBatch(slowCtx, {
        rows: slowRows,
        workers: 1,
        env,
        name: `evm-one-slow-${i}`,
      });
      slowRuns.push(r);
      ctx.log(`evm run ${i + 1} at ${REALISTIC_LATENCY_MS} ms: one chain ${r.perSecond.toFixed(2)}/s`);
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
    oneChainRealistic: {
      latencyMs: REALISTIC_LATENCY_MS,
      rows: slowRows.length,
      bound: 1000 / REALISTIC_LATENCY_MS,
      runs: slowRuns,
    },
  };
}
