import { solanaRows } from '../lib/rows.ts';
import { runProductBatch, type Context, type FlowRun } from './throughput.ts';

export const SCALE_CONCURRENCY = 64;

export type ScaleResult = {
  readonly rows: number;
  readonly concurrency: number;
  readonly byWorkers: readonly { readonly workers: number; readonly runs: readonly FlowRun[] }[];
};

/**
 * 5. One SOLANA → EVM batch (no nonce serialisation, so only CPU and the service limit it) on 1, 2 and
 * 4 `usdc-batch worker` processes started together, WORKER_CONCURRENCY=64 each.
 */
export async function benchScale(
  ctx: Context,
  p: { rows: number; runs: number; counts?: readonly number[] },
): Promise<ScaleResult> {
  const rows = solanaRows(p.rows, 'scale');
  const counts = p.counts ?? [1, 2, 4];
  const byWorkers = counts.map((workers) => ({ workers, runs: [] as FlowRun[] }));
  for (let i = 0; i < p.runs; i++) {
    // Rotated, so that no count always runs first (or last) in a round.
    for (let j = 0; j < byWorkers.length; j++) {
      const entry = byWorkers[(i + j) % byWorkers.length] as (typeof byWorkers)[number];
      const r = await runProductBatch(ctx, {
        rows,
        workers: entry.workers,
        env: { WORKER_CONCURRENCY: String(SCALE_CONCURRENCY) },
        name: `scale-${entry.workers}-${i}`,
      });
      entry.runs.push(r);
      ctx.log(`scale run ${i + 1}: ${entry.workers} worker(s) ${r.perSecond.toFixed(1)}/s`);
    }
  }
  return { rows: p.rows, concurrency: SCALE_CONCURRENCY, byWorkers };
}
