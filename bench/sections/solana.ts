import { solanaRows } from '../lib/rows.ts';
import { runProductBatch, runRawSolanaBatch, type Context, type FlowRun } from './throughput.ts';

export const SOLANA_CONCURRENCY = 64;

/**
 * The sandbox's status step during this section: an intent reaches `minted` (and the sandbox mints
 * its destination on anvil) two steps after it was submitted, so every run ends, and the sandbox is
 * reset, before any of its mints. By default (2 s a step) a run's window held the mints of the
 * transfers it submitted in all but its last 4 s: a slower run held more of its own, and the
 * sandbox's and anvil's CPU then favoured the faster side. The mints are the destination chain's
 * work, the same for both sides and done after either worker is finished with the row. Set again
 * after the reset before each run (Context.sandboxSettings): a reset brings back the sandbox's
 * starting configuration, its 2 s steps included.
 */
const STATUS_STEP_MS = 120_000;

export type SolanaResult = {
  readonly rows: number;
  readonly latencyMs: number;
  readonly concurrency: number;
  /** concurrency / (3 calls × latency): what the calls alone would allow, per second. */
  readonly bound: number;
  readonly runs: readonly { readonly ours: FlowRun; readonly raw: FlowRun }[];
};

/**
 * 2. SOLANA → EVM rows: `usdc-batch worker` (WORKER_CONCURRENCY=64) against a raw BullMQ worker
 * (concurrency 64) making the same three calls, the sandbox in its own process answering every
 * call after `latencyMs`.
 */
export async function benchSolana(
  ctx: Context,
  p: { rows: number; runs: number; latencyMs: number },
): Promise<SolanaResult> {
  const rows = solanaRows(p.rows, 'sol');
  const runs: { ours: FlowRun; raw: FlowRun }[] = [];
  const { statusStepMs } = await ctx.sandbox.admin.config();
  // BENCH_SETTLE_NOW=1 (options.ts) mints every intent at its submit instead, in both sides' windows.
  const section = ctx.diagnostics?.settleNow
    ? ctx
    : { ...ctx, sandboxSettings: { statusStepMs: STATUS_STEP_MS } };
  try {
    await runBoth(section, rows, p.runs, runs);
  } finally {
    await ctx.sandbox.admin.configure({ statusStepMs });
  }
  return {
    rows: p.rows,
    latencyMs: p.latencyMs,
    concurrency: SOLANA_CONCURRENCY,
    bound: SOLANA_CONCURRENCY / ((3 * p.latencyMs) / 1000),
    runs,
  };
}

/** `runs` alternated runs of the product and the raw worker on the same rows, pushed to `out`. */
async function runBoth(
  ctx: Context,
  rows: ReturnType<typeof solanaRows>,
  n: number,
  out: { ours: FlowRun; raw: FlowRun }[],
): Promise<void> {
  for (let i = 0; i < n; i++) {
    const ours = () =>
      runProductBatch(ctx, {
        rows,
        workers: 1,
        env: { WORKER_CONCURRENCY: String(SOLANA_CONCURRENCY) },
        name: `solana-${i}`,
      });
    const raw = () => runRawSolanaBatch(ctx, { rows, concurrency: SOLANA_CONCURRENCY });
    let o: FlowRun;
    let r: FlowRun;
    if (i % 2 === 0) {
      o = await ours();
      r = await raw();
    } else {
      r = await raw();
      o = await ours();
    }
    out.push({ ours: o, raw: r });
    ctx.log(
      `solana run ${i + 1}: worker ${o.perSecond.toFixed(1)}/s, raw ${r.perSecond.toFixed(1)}/s, ratio ${(o.perSecond / r.perSecond).toFixed(2)}`,
    );
  }
}
