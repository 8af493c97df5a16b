/**
 * Bench knobs, from the environment (the bench is a dev tool, not the product: it reads env here).
 * - BENCH_RUNS: runs per measurement (default 3; the median is reported).
 * - BENCH_QUICK=1: small sizes and one run, to develop the bench itself; its numbers mean little.
 * - BENCH_ONLY=ingest,solana,evm,owners,redis,scale,cluster,tracing,retention,responsiveness,screening,cctp: a subset of the sections.
 * - BENCH_OUT: where to write the report (default BENCHMARKS.md at the repository root).
 * - BENCH_TRACE_FILE: the redis section's MONITOR run also writes every command it saw there.
 * To find where a product batch's time goes (sections that run `usdc-batch worker`: solana, evm, …):
 * - BENCH_WORKER_NODE_OPTIONS: NODE_OPTIONS of the worker processes, e.g.
 *   `--cpu-prof --cpu-prof-dir=/tmp/prof` (a CPU profile of each worker, written when it stops).
 * - BENCH_LOG_COMMANDS=1: each batch's Redis commands per transfer, by command, and the sandbox's
 *   requests by operation, in the bench's log.
 * - BENCH_BATCH_TRACE_FILE: every Redis command of each batch (MONITOR, as BENCH_TRACE_FILE); the
 *   CPU and rates of a traced run mean little.
 * - BENCH_SETTLE_NOW=1: the sandbox pays each intent's destination when it is submitted
 *   (statusStepMs 0), in the product's and the raw worker's runs alike, so that every run's window
 *   holds the settlements (relayer transaction signed and sent to anvil) of all its transfers. By
 *   default they come 4 s after submit, and the Solana section puts them after its runs end
 *   (sections/solana.ts): a window holding those of its transfers submitted more than 4 s before it
 *   ends favours the faster side, which holds fewer of its own.
 */
export const SECTIONS = [
  'ingest',
  'solana',
  'evm',
  'owners',
  'redis',
  'scale',
  'cluster',
  'tracing',
  'retention',
  'responsiveness',
  'screening',
  'cctp',
] as const;
export type Section = (typeof SECTIONS)[number];

/** What a product batch also does to show where its time goes (none of it by default). */
export type Diagnostics = {
  readonly workerNodeOptions: string | undefined;
  readonly logCommands: boolean;
  readonly batchTraceFile: string | undefined;
  readonly settleNow: boolean;
};

export type BenchOptions = {
  readonly quick: boolean;
  readonly runs: number;
  readonly only: ReadonlySet<Section>;
  readonly out: string | undefined;
  readonly traceFile: string | undefined;
  readonly diagnostics: Diagnostics;
  readonly sizes: {
    readonly ingestRows: number;
    readonly solanaRows: number;
    readonly evmRowsOneChain: number;
    readonly evmRowsPerChain: number;
    readonly redisRows: number;
    readonly scaleRows: number;
    readonly clusterRows: number;
    readonly tracingRows: number;
    /** Rows of each of the retention section's two batches. */
    readonly retentionRows: number;
  };
};

export function readOptions(env: NodeJS.ProcessEnv = process.env): BenchOptions {
  const quick = env['BENCH_QUICK'] === '1';
  const runs = Math.max(1, Number(env['BENCH_RUNS'] ?? (quick ? 1 : 3)) || 1);
  const only = new Set<Section>(
    (env['BENCH_ONLY'] ?? SECTIONS.join(','))
      .split(',')
      .map((s) => s.trim())
      .filter((s): s is Section => (SECTIONS as readonly string[]).includes(s)),
  );
  return {
    quick,
    runs,
    only,
    out: env['BENCH_OUT'],
    traceFile: env['BENCH_TRACE_FILE'],
    diagnostics: {
      workerNodeOptions: env['BENCH_WORKER_NODE_OPTIONS'],
      logCommands: env['BENCH_LOG_COMMANDS'] === '1',
      batchTraceFile: env['BENCH_BATCH_TRACE_FILE'],
      settleNow: env['BENCH_SETTLE_NOW'] === '1',
    },
    sizes: quick
      ? {
          ingestRows: 10_000,
          solanaRows: 300,
          evmRowsOneChain: 100,
          evmRowsPerChain: 100,
          redisRows: 300,
          scaleRows: 300,
          clusterRows: 200,
          tracingRows: 300,
          retentionRows: 600,
        }
      : {
          ingestRows: 100_000,
          solanaRows: 2_000,
          evmRowsOneChain: 500,
          evmRowsPerChain: 500,
          redisRows: 2_000,
          scaleRows: 2_000,
          clusterRows: 500,
          tracingRows: 2_000,
          // Over 1,000 finished jobs per queue in the first batch (a third of the rows on SOLANA, the
          // rest over four EVM chains), so the second one is measured with the kept jobs at their cap.
          retentionRows: 8_000,
        },
  };
}
