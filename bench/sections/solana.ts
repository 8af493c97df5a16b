import { solanaRows } from '../lib/rows.ts';
import { runProductBatch, runRawSolanaBatch, type Context, type FlowRun } from './throughput.ts';

export const SOLANA_CONCURRENCY = 64;

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
  for (let i = 0; i < p.runs; i++) {
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
    runs.push({ ours: o, raw: r });
    ctx.log(
      `solana run ${i + 1}: worker ${o.perSecond.toFixed(1)}/s, raw ${r.perSecond.toFixed(1)}/s, ratio ${(o.perSecond / r.perSecond).toFixed(2)}`,
    );
  }
  return {
    rows: p.rows,
    latencyMs: p.latencyMs,
    concurrency: SOLANA_CONCURRENCY,
    bound: SOLANA_CONCURRENCY / ((3 * p.latencyMs) / 1000),
    runs,
  };
}
