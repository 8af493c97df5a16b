import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runNodeTimed } from '../lib/processes.ts';
import { evmRows, mixedRows } from '../lib/rows.ts';
import { median } from '../lib/stats.ts';
import { enqueueFile, startBenchRedis, writeCsv } from '../lib/stack.ts';
import { EVM_CONCURRENCY } from './evm.ts';
import { runProductBatch, type Context } from './throughput.ts';

const LOAD = fileURLToPath(new URL('../raw/screening-load.ts', import.meta.url));
export const LIST_ADDRESSES = 1_000_000;
/** Features of the synthetic sdn_advanced.xml: a file of OFAC's size (tens of MB). */
const ADVANCED_FEATURES = 100_000;

const SERVICE_ENV = {
  // enqueue loads the service settings (it can --dry-run); nothing is called without --dry-run.
  TRANSFER_API_URL: 'http://127.0.0.1:9',
  TRANSFER_API_KEY: 'sk_bench_unused',
  LOG_LEVEL: 'warn',
};

export type ListLoad = {
  readonly file: string;
  readonly fileBytes: number;
  readonly addresses: number;
  readonly ms: number;
  readonly heapBytes: number;
  /** Typed arrays (the address tables live there, outside the JS heap). */
  readonly arrayBufferBytes: number;
  readonly rssBytes: number;
  readonly lookupNs: number;
};

export type ScreeningResult = {
  readonly listAddresses: number;
  readonly plain: ListLoad;
  readonly advanced: ListLoad;
  readonly enqueue: { readonly rows: number; readonly withoutMs: number[]; readonly withMs: number[] };
  readonly evm: {
    readonly rows: number;
    readonly withoutPerSecond: number[];
    readonly withPerSecond: number[];
    /** The worker's CPU per transfer (ms): less noisy than the pace on a shared machine. */
    readonly withoutCpuMs?: number[];
    readonly withCpuMs?: number[];
  };
};

/** A plain list of `n` random EVM addresses, written as a stream. */
async function writePlainList(path: string, n: number): Promise<number> {
  const out = createWriteStream(path);
  let bytes = 0;
  out.write('# date: 2099-01-01\n');
  for (let i = 0; i < n; i++) {
    const line = `0x${randomBytes(20).toString('hex')}\n`;
    bytes += line.length;
    if (!out.write(line)) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise<void>((r) => out.end(r));
  return bytes;
}

/** An sdn_advanced.xml of `n` parties, each with one ETH address feature and one other feature. */
async function writeAdvancedList(path: string, n: number): Promise<number> {
  const out = createWriteStream(path);
  let bytes = 0;
  const w = async (s: string) => {
    bytes += s.length;
    if (!out.write(s)) await new Promise<void>((r) => out.once('drain', () => r()));
  };
  await w(
    '<?xml version="1.0" encoding="utf-8"?>\n<Sanctions xmlns="https://example.invalid/ADVANCED_XML">\n',
  );
  await w('<DateOfIssue><Year>2099</Year><Month>1</Month><Day>1</Day></DateOfIssue>\n');
  await w('<ReferenceValueSets><FeatureTypeValues><FeatureType ID="8">Place of Birth</FeatureType>');
  await w(
    '<FeatureType ID="345">Digital Currency Address - ETH</FeatureType></FeatureTypeValues></ReferenceValueSets>\n<DistinctParties>\n',
  );
  for (let i = 0; i < n; i++) {
    await w(
      `<DistinctParty FixedRef="${i}"><Comment /><Profile ID="${i}" PartySubTypeID="4"><Identity ID="${i}" FixedRef="${i}" Primary="true" False="false"><Alias FixedRef="${i}" AliasTypeID="1403" Primary="true" LowQuality="false"><DocumentedName ID="${i}" FixedRef="${i}" DocNameStatusID="1"><DocumentedNamePart><NamePartValue NamePartGroupID="1" ScriptID="215">PARTY ${i}</NamePartValue></DocumentedNamePart></DocumentedName></Alias></Identity>` +
        `<Feature ID="${2 * i}" FeatureTypeID="8"><FeatureVersion ID="${2 * i}" ReliabilityID="1"><Comment /><VersionDetail DetailTypeID="1432">Somewhere</VersionDetail></FeatureVersion></Feature>` +
        `<Feature ID="${2 * i + 1}" FeatureTypeID="345"><FeatureVersion ID="${2 * i + 1}" ReliabilityID="1"><Comment /><VersionDetail DetailTypeID="1432">0x${randomBytes(20).toString('hex')}</VersionDetail></FeatureVersion></Feature></Profile></DistinctParty>\n`,
    );
  }
  await w('</DistinctParties>\n</Sanctions>\n');
  await new Promise<void>((r) => out.end(r));
  return bytes;
}

async function measureLoad(file: string, fileBytes: number): Promise<ListLoad> {
  const res = await runNodeTimed(['--expose-gc', LOAD, file], {}, 600_000);
  if (res.code !== 0) throw new Error(`loading ${file} exited ${res.code}: ${res.stderr.slice(-1000)}`);
  const doc = JSON.parse(res.stdout) as Omit<ListLoad, 'file' | 'fileBytes'>;
  return { file, fileBytes, ...doc };
}

/**
 * Screening against a list of a million addresses: the list's load time and memory (in a process of
 * its own), a 100,000-row enqueue with and without it, and the EVM pace (one chain, one owner) of a
 * worker with and without it. The order of the two sides alternates between runs.
 */
export async function benchScreening(
  ctx: Context,
  p: { readonly ingestRows: number; readonly evmRows: number; readonly runs: number },
): Promise<ScreeningResult> {
  const plainFile = join(ctx.dir, 'sanctions-1m.txt');
  const plain = await measureLoad(plainFile, await writePlainList(plainFile, LIST_ADDRESSES));
  ctx.log(
    `screening: a ${LIST_ADDRESSES}-address list loads in ${plain.ms.toFixed(0)} ms, tables ${(plain.arrayBufferBytes / 2 ** 20).toFixed(0)} MiB`,
  );
  const advFile = join(ctx.dir, 'sdn_advanced.xml');
  const advanced = await measureLoad(advFile, await writeAdvancedList(advFile, ADVANCED_FEATURES));
  ctx.log(
    `screening: a ${(advanced.fileBytes / 2 ** 20).toFixed(0)} MiB sdn_advanced.xml loads in ${advanced.ms.toFixed(0)} ms`,
  );

  const lists = { SCREENING_LISTS: plainFile, SCREENING_MAX_AGE: '36500d' };
  const csv = writeCsv(ctx.dir, 'screening-ingest.csv', mixedRows(p.ingestRows, 'scr'));
  const enqueue = { rows: p.ingestRows, withoutMs: [] as number[], withMs: [] as number[] };
  const evm = {
    rows: p.evmRows,
    withoutPerSecond: [] as number[],
    withPerSecond: [] as number[],
    withoutCpuMs: [] as number[],
    withCpuMs: [] as number[],
  };
  const rows = evmRows(p.evmRows, ['BASE'], 'scr-evm', 'ARB');
  for (let i = 0; i < p.runs; i++) {
    for (const withLists of i % 2 === 0 ? [false, true] : [true, false]) {
      const redis = await startBenchRedis();
      try {
        const env = {
          REDIS_URL: redis.url,
          QUEUE_PREFIX: 'usdc',
          ...SERVICE_ENV,
          ...(withLists ? lists : {}),
        };
        const run = await enqueueFile(csv, env);
        (withLists ? enqueue.withMs : enqueue.withoutMs).push(run.wallMs);
      } finally {
        await redis.stop();
      }
      const flow = await runProductBatch(ctx, {
        rows,
        workers: 1,
        env: { WORKER_CONCURRENCY: String(EVM_CONCURRENCY), ...(withLists ? lists : {}) },
        name: `screening-evm-${i}-${withLists ? 'with' : 'without'}`,
      });
      (withLists ? evm.withPerSecond : evm.withoutPerSecond).push(flow.perSecond);
      (withLists ? evm.withCpuMs : evm.withoutCpuMs).push(flow.cpuMsPerTransfer.worker);
    }
    ctx.log(
      `screening run ${i + 1}: enqueue ${enqueue.withoutMs.at(-1)?.toFixed(0)} → ${enqueue.withMs.at(-1)?.toFixed(0)} ms, EVM ${evm.withoutPerSecond.at(-1)?.toFixed(1)} → ${evm.withPerSecond.at(-1)?.toFixed(1)}/s`,
    );
  }
  return { listAddresses: LIST_ADDRESSES, plain, advanced, enqueue, evm };
}

const MiB = (b: number) => (b / 2 ** 20).toFixed(0);
const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %`;

/** The report's section (bench/report.ts). */
export function screeningReport(r: ScreeningResult): string[] {
  const enqWithout = median(r.enqueue.withoutMs);
  const enqWith = median(r.enqueue.withMs);
  const paceWithout = median(r.evm.withoutPerSecond);
  const paceWith = median(r.evm.withPerSecond);
  const enqCost = enqWith / enqWithout - 1;
  const paceCost = 1 - paceWith / paceWithout;
  return [
    '## 11. Sanctions screening against a million addresses',
    '',
    `A plain list of ${r.listAddresses.toLocaleString('en-US')} random EVM addresses (SCREENING_LISTS; docs/screening.md), the size of a large commercial list — OFAC's own has a few thousand.`,
    '',
    '| measure | value |',
    '|---|---|',
    `| load of the ${r.listAddresses.toLocaleString('en-US')}-address list (${MiB(r.plain.fileBytes)} MiB) | ${(r.plain.ms / 1000).toFixed(2)} s; the address tables ${MiB(r.plain.arrayBufferBytes)} MiB (typed arrays), JS heap +${MiB(r.plain.heapBytes)} MiB, RSS +${MiB(r.plain.rssBytes)} MiB after a GC |`,
    `| load of a ${MiB(r.advanced.fileBytes)} MiB \`sdn_advanced.xml\` (${r.advanced.addresses.toLocaleString('en-US')} addresses; streamed) | ${(r.advanced.ms / 1000).toFixed(2)} s; heap +${MiB(r.advanced.heapBytes)} MiB |`,
    `| one lookup (an address not listed, the million-address list) | ${r.plain.lookupNs.toFixed(0)} ns |`,
    `| \`enqueue\` of ${r.enqueue.rows.toLocaleString('en-US')} rows, without → with the list (whole process, load included) | ${(enqWithout / 1000).toFixed(1)} s → ${(enqWith / 1000).toFixed(1)} s (**${pct(enqCost)}**; target ≤ +10 %: ${enqCost <= 0.1 ? '**met**' : '**missed**'}) |`,
    `| EVM pace, one chain, ${r.evm.rows} rows, without → with the list | ${paceWithout.toFixed(1)}/s → ${paceWith.toFixed(1)}/s (**${pct(-paceCost)}**; target ≤ 2 % slower: ${paceCost <= 0.02 ? '**met**' : '**missed**'}) |`,
    ...(r.evm.withCpuMs && r.evm.withoutCpuMs
      ? [
          `| the worker's CPU per EVM transfer, without → with the list | ${median(r.evm.withoutCpuMs).toFixed(2)} ms → ${median(r.evm.withCpuMs).toFixed(2)} ms |`,
        ]
      : []),
    '',
    `Runs: enqueue ${r.enqueue.withoutMs.map((m) => (m / 1000).toFixed(1)).join(', ')} s without, ${r.enqueue.withMs.map((m) => (m / 1000).toFixed(1)).join(', ')} s with; EVM ${r.evm.withoutPerSecond.map((x) => x.toFixed(1)).join(', ')}/s without, ${r.evm.withPerSecond.map((x) => x.toFixed(1)).join(', ')}/s with. The worker loads its lists at start, before it takes jobs, so its load is not in the pace.`,
  ];
}
