/**
 * `npm run bench`: measures usdc-batch against a raw BullMQ baseline and its own bounds, and writes
 * BENCHMARKS.md. See bench/lib/options.ts for BENCH_RUNS, BENCH_QUICK, BENCH_ONLY, BENCH_OUT;
 * BENCH_REPORT_ONLY=<results.json> re-renders the report from a saved run without measuring.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../support/cli.ts';
import { solanaKeypairFile } from '../support/fixtures.ts';
import { cleanupAll } from './lib/cleanup.ts';
import { describeMachine } from './lib/machine.ts';
import { readOptions, SECTIONS, type Section } from './lib/options.ts';
import { startBenchSandbox } from './lib/stack.ts';
import { renderReport, type BenchResults } from './report.ts';
import { benchCluster } from './sections/cluster.ts';
import { benchEvm } from './sections/evm.ts';
import { benchOwners } from './sections/owners.ts';
import { benchIngest } from './sections/ingest.ts';
import { benchRedisFootprint } from './sections/redis-footprint.ts';
import { benchRetention } from './sections/retention.ts';
import { benchResponsiveness } from './sections/responsiveness.ts';
import { benchScale } from './sections/scale.ts';
import { benchSolana } from './sections/solana.ts';
import { benchTracing } from './sections/tracing.ts';
import { benchScreening } from './sections/screening.ts';
import { benchCctp } from './sections/cctp.ts';
import type { Context } from './sections/throughput.ts';

const LATENCY_MS = 20;
/**
 * The whole bench is bounded: past this, everything is stopped and the run fails. A full run took
 * 37 minutes on one 2-core machine and over 45 (its old bound, reached in the screening section with
 * nothing written) on a slower one of the same kind.
 */
const OVERALL_TIMEOUT_MS = 90 * 60 * 1000;

const options = readOptions();
const outFile = options.out ?? join(REPO_ROOT, 'BENCHMARKS.md');
const log = (s: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${s}\n`);

const reportOnly = process.env['BENCH_REPORT_ONLY'];
if (reportOnly) {
  const saved = JSON.parse(readFileSync(reportOnly, 'utf8')) as BenchResults;
  writeFileSync(outFile, renderReport(saved));
  log(`wrote ${outFile} from ${reportOnly}`);
  process.exit(0);
}

let stopping = false;
const abort = async (why: string, code: number) => {
  if (stopping) return;
  stopping = true;
  log(`${why}: stopping every process the bench started`);
  await cleanupAll();
  process.exit(code);
};
process.once('SIGINT', () => void abort('SIGINT', 130));
process.once('SIGTERM', () => void abort('SIGTERM', 143));
const overall = setTimeout(
  () => void abort(`over ${OVERALL_TIMEOUT_MS / 60000} minutes`, 1),
  OVERALL_TIMEOUT_MS,
);
overall.unref();

const started = Date.now();
const machine = describeMachine();
const dir = mkdtempSync(join(tmpdir(), 'usdc-bench-'));
const errors: { section: string; message: string }[] = [];
const results: { -readonly [K in keyof BenchResults]?: BenchResults[K] } = {};
const want = (s: Section) => options.only.has(s);
const { sizes, runs } = options;

log(
  `machine: ${machine.nproc} cores, ${machine.cpuModel}, Node ${machine.node}, Redis ${machine.redis}; runs ${runs}`,
);

async function section<T>(name: Section, fn: () => Promise<T>): Promise<T | undefined> {
  if (!want(name)) return undefined;
  const t0 = Date.now();
  log(`${name}: start`);
  try {
    const r = await fn();
    log(`${name}: done in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    return r;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    log(`${name}: FAILED: ${message}`);
    errors.push({ section: name, message });
    return undefined;
  }
}

let failed = false;
try {
  results.ingest = await section('ingest', () => benchIngest({ rows: sizes.ingestRows, runs, dir, log }));
  results.responsiveness = await section('responsiveness', () => benchResponsiveness({ runs, log }));

  // Every section but these runs against the sandbox.
  const needsSandbox = SECTIONS.some((s) => s !== 'ingest' && s !== 'responsiveness' && want(s));
  if (needsSandbox) {
    const sandbox = await startBenchSandbox(LATENCY_MS);
    const ctx: Context = {
      sandbox,
      solanaKeyFile: solanaKeypairFile(dir).file,
      dir,
      log,
      diagnostics: options.diagnostics,
    };
    results.solana = await section('solana', () =>
      benchSolana(ctx, { rows: sizes.solanaRows, runs, latencyMs: LATENCY_MS }),
    );
    results.evm = await section('evm', () =>
      benchEvm(ctx, {
        rowsOneChain: sizes.evmRowsOneChain,
        rowsPerChain: sizes.evmRowsPerChain,
        runs,
        latencyMs: LATENCY_MS,
      }),
    );
    results.owners = await section('owners', () => benchOwners(ctx, { runs }));
    results.redis = await section('redis', () =>
      benchRedisFootprint(ctx, { rows: sizes.redisRows, runs, traceFile: options.traceFile }),
    );
    results.scale = await section('scale', () => benchScale(ctx, { rows: sizes.scaleRows, runs }));
    results.cluster = await section('cluster', () => benchCluster(ctx, { rows: sizes.clusterRows }));
    results.tracing = await section('tracing', () => benchTracing(ctx, { rows: sizes.tracingRows, runs }));
    results.retention = await section('retention', () => benchRetention(ctx, { rows: sizes.retentionRows }));
    results.screening = await section('screening', () =>
      benchScreening(ctx, { ingestRows: sizes.ingestRows, evmRows: sizes.evmRowsOneChain, runs }),
    );
    results.cctp = await section('cctp', () => benchCctp(ctx, { rows: options.quick ? 10 : 40, runs }));
    await sandbox.close();
  }
} catch (err) {
  failed = true;
  log(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
} finally {
  await cleanupAll();
  rmSync(dir, { recursive: true, force: true });
}

const full: BenchResults = {
  startedAt: new Date(started).toISOString(),
  durationS: (Date.now() - started) / 1000,
  machine,
  options: { quick: options.quick, runs },
  latencyMs: LATENCY_MS,
  errors,
  ...results,
};
// One file per run, named by its start: a later run with BENCH_ONLY does not overwrite the results of
// the full run behind BENCHMARKS.md, which BENCH_REPORT_ONLY can then render again after a prose change.
const resultsFile = join(tmpdir(), `usdc-batch-bench-results-${full.startedAt.replace(/[:.]/g, '-')}.json`);
writeFileSync(
  resultsFile,
  JSON.stringify(full, (_k, v: unknown) => (v instanceof Map ? undefined : v), 1),
);
writeFileSync(outFile, renderReport(full));
log(`wrote ${outFile} (raw results: ${resultsFile}) in ${(full.durationS / 60).toFixed(1)} min`);
clearTimeout(overall);
process.exit(failed || errors.length > 0 ? 1 : 0);
