import { keccak256, toHex } from 'viem';
import { evmRows } from '../lib/rows.ts';
import { startBenchSandbox } from '../lib/stack.ts';
import { EVM_CONCURRENCY, REALISTIC_LATENCY_MS } from './evm.ts';
import { runProductBatch, type Context, type FlowRun } from './throughput.ts';

/** Owner counts measured (BENCH_OWNER_COUNTS, default 1,2,4,8): one chain, the service at REALISTIC_LATENCY_MS. */
export const OWNER_COUNTS: readonly number[] = (process.env['BENCH_OWNER_COUNTS'] ?? '1,2,4,8')
  .split(',')
  .map(Number);
/** Rows per owner in one run: enough for ~12 s of the bound at 200 ms. */
const ROWS_PER_OWNER = 60;

export type OwnersResult = {
  readonly latencyMs: number;
  readonly concurrency: number;
  /** One (chain, owner)'s bound: 1 / transfer-call latency. */
  readonly boundPerOwner: number;
  readonly counts: readonly {
    readonly owners: number;
    readonly rows: number;
    readonly runs: readonly FlowRun[];
  }[];
};

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
  const counts: { owners: number; rows: number; runs: FlowRun[] }[] = [];
  try {
    const slowCtx: Context = { ...ctx, sandbox };
    for (const owners of OWNER_COUNTS) {
      const rows = evmRows(ROWS_PER_OWNER * owners, ['BASE'], `own${owners}`, 'ARB');
      const env = {
        WORKER_CONCURRENCY: String(concurrency),
        EVM_PRIVATE_KEY: benchOwnerKeys(owners).join(','),
      };
      const runs: FlowRun[] = [];
      for (let i = 0; i < p.runs; i++) {
        const r = await runProductBatch(slowCtx, { rows, workers: 1, env, name: `owners-${owners}-${i}` });
        runs.push(r);
        ctx.log(
          `owners ${owners}, run ${i + 1}: ${r.perSecond.toFixed(2)}/s (bound ${((owners * 1000) / REALISTIC_LATENCY_MS).toFixed(0)}/s)`,
        );
      }
      counts.push({ owners, rows: rows.length, runs });
    }
  } finally {
    await sandbox.close();
  }
  return { latencyMs: REALISTIC_LATENCY_MS, concurrency, boundPerOwner: 1000 / REALISTIC_LATENCY_MS, counts };
}
