import { solanaRows } from '../lib/rows.ts';
import { benchOnchainReads, type OnchainReadsResult } from './onchain-reads.ts';
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
  readonly runs: readonly SolanaRuns[];
  /** The on-chain read alone, once per round (absent in older results): onchain-reads.ts. */
  readonly readsAlone?: readonly OnchainReadsResult[];
};

/**
 * One round of the section: the product, the raw worker, and (absent in older results) the product
 * with SCREENING_ONCHAIN=off — not a setting to pay with, but the product without the one chain read
 * the raw worker does not make (USDC's `isBlacklisted` of each recipient, docs/screening.md), so that
 * the report can show which share of the gap is that read's cost to the chain and which the worker's.
 */
export type SolanaRuns = { readonly ours: FlowRun; readonly raw: FlowRun; readonly unscreened?: FlowRun };

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
  const runs: SolanaRuns[] = [];
  const { statusStepMs } = await ctx.sandbox.admin.config();
  // BENCH_SETTLE_NOW=1 (options.ts) mints every intent at its submit instead, in both sides' windows.
  const section = ctx.diagnostics?.settleNow
    ? ctx
    : { ...ctx, sandboxSettings: { statusStepMs: STATUS_STEP_MS } };
  try {
    await runRounds(section, rows, p.runs, runs);
  } finally {
    await ctx.sandbox.admin.configure({ statusStepMs });
  }
  const readsAlone: OnchainReadsResult[] = [];
  for (let i = 0; i < p.runs; i++)
    readsAlone.push(await benchOnchainReads(ctx, { reads: 5 * p.rows, inFlight: SOLANA_CONCURRENCY }));
  return {
    rows: p.rows,
    latencyMs: p.latencyMs,
    concurrency: SOLANA_CONCURRENCY,
    bound: SOLANA_CONCURRENCY / ((3 * p.latencyMs) / 1000),
    runs,
    readsAlone,
  };
}

/**
 * `runs` rounds of the product, the raw worker and the product without its on-chain read, on the
 * same rows, their order rotated from round to round, pushed to `out`.
 */
async function runRounds(
  ctx: Context,
  rows: ReturnType<typeof solanaRows>,
  n: number,
  out: SolanaRuns[],
): Promise<void> {
  const product = (name: string, env: Record<string, string> = {}) =>
    runProductBatch(ctx, {
      rows,
      workers: 1,
      env: { WORKER_CONCURRENCY: String(SOLANA_CONCURRENCY), ...env },
      name,
    });
  for (let i = 0; i < n; i++) {
    const sides = [
      () => product(`solana-${i}`),
      () => runRawSolanaBatch(ctx, { rows, concurrency: SOLANA_CONCURRENCY }),
      () => product(`solana-unscreened-${i}`, { SCREENING_ONCHAIN: 'off' }),
    ];
    // Round i starts with side i mod 3: each side goes first, second and third in turn.
    const got: FlowRun[] = [];
    for (let j = 0; j < sides.length; j++) {
      const k = (i + j) % sides.length;
      got[k] = await (sides[k] as () => Promise<FlowRun>)();
    }
    const [ours, raw, unscreened] = got as [FlowRun, FlowRun, FlowRun];
    out.push({ ours, raw, unscreened });
    ctx.log(
      `solana run ${i + 1}: worker ${ours.perSecond.toFixed(1)}/s, raw ${raw.perSecond.toFixed(1)}/s, ratio ${(ours.perSecond / raw.perSecond).toFixed(2)}; without the on-chain read ${unscreened.perSecond.toFixed(1)}/s, ratio ${(unscreened.perSecond / raw.perSecond).toFixed(2)}`,
    );
  }
}
