import { FIRST_LOOKS_MS } from '../../src/pipeline/cctp/owner-call.ts';
import { queueNameFor } from '../../src/queue/jobs.ts';
import { keys } from '../../src/store/keys.ts';
import {
  commandCalls,
  matchedBytes,
  settledMemory,
  topCommands,
  totalCalls,
  withoutOwn,
} from '../lib/redis-info.ts';
import { evmRows } from '../lib/rows.ts';
import { cpuShareLines, cpuSpent, readCpu, type CpuAccount } from '../lib/process-cpu.ts';
import {
  batchOutcome,
  enqueueFile,
  productEnv,
  startBenchRedis,
  startWorkers,
  waitBatchComplete,
  writeCsv,
} from '../lib/stack.ts';
import type { Context } from './throughput.ts';

/**
 * The sandbox's chains mine each transaction at once (anvil's automine; an empty block after a
 * second without one, anvil-chain.ts): a burn's receipt is there when the worker first looks, 250 ms
 * after sending it (owner-call.ts FIRST_LOOKS_MS).
 */
const FIRST_LOOK_MS = FIRST_LOOKS_MS[0];

export type CctpRun = {
  /** Burns per second of one (chain, owner): first transfer taken → the last burn mined. */
  readonly burnsPerSecond: number;
  readonly burnWindowMs: number;
  /** First transfer taken → the last mint seen (every intent `complete`). */
  readonly mintedWindowMs: number;
  /** Redis commands per transfer, burn and mint (INFO commandstats, Lua-internal calls included). */
  readonly commandsPerTransfer: number;
  readonly topCommands: string;
  /** used_memory after the batch is minted, less before it was enqueued (clients' and AOF buffers apart), per transfer. */
  readonly bytesPerTransfer: number;
  /** Where the CPU went from the batch enqueued to its last mint (process-cpu.ts); absent in older results. */
  readonly cpu?: CpuAccount | undefined;
  /** One burn's cycle, from its job log's lines (medians); absent in older results. */
  readonly cycle?: BurnCycle | undefined;
};

/** The owner's serial section per burn, from the times the job logs give each burn's send and receipt. */
export type BurnCycle = {
  /** A burn sent → its receipt seen (the worker's look at it). */
  readonly sentToMinedMs: number;
  /** A burn's receipt seen → the owner's next burn sent (the lease handed on, reads, signature, send). */
  readonly minedToNextSentMs: number;
};

export type CctpResult = {
  readonly rows: number;
  /**
   * Burns per second of one (chain, owner) at most: the lease is held from the approve to the burn's
   * receipt, seen at the worker's first look (firstLookMs after the send) on chains that mine at once.
   */
  readonly bound: number;
  /** The first look's delay; absent in results from before it (the look was then every second). */
  readonly firstLookMs?: number | undefined;
  readonly runs: readonly CctpRun[];
  /** The second batch of each run, into the same worker and Redis: the marginal cost. */
  readonly marginal: readonly CctpRun[];
  /** What the transfers of each run's two batches keep for good, per transfer; absent in older results. */
  readonly retained?: readonly RetainedBytes[] | undefined;
};

/**
 * What a minted transfer keeps in Redis for good, once BullMQ has dropped its job: Σ `MEMORY USAGE`
 * (SAMPLES 0) of each kind of key over the run's transfers, per transfer.
 */
export type RetainedBytes = {
  /** `P:t:*`: the transfer records. */
  readonly records: number;
  /** `P:otx:*`: the owners' transactions (approve, burn, mint) and their accounts (`c:<call id>`). */
  readonly ownerTxs: number;
  /** `P:payout:*` and `P:batch:*`: payout ids, batch records, row and state sets. */
  readonly other: number;
};

/** Σ MEMORY USAGE of the keys that stay for good (RetainedBytes), over `rows` transfers. */
async function retainedBytes(redis: BenchRedis, prefix: string, rows: number): Promise<RetainedBytes> {
  const sum = (match: string) => matchedBytes(redis.client, match);
  return {
    records: (await sum(`${prefix}:t:*`)) / rows,
    ownerTxs: (await sum(`${prefix}:otx:*`)) / rows,
    other: ((await sum(`${prefix}:payout:*`)) + (await sum(`${prefix}:batch:*`))) / rows,
  };
}

/** Waits until every transfer of the batch says its intent is `complete` (minted): when, and the HGETs it sent. */
async function waitMinted(
  client: Awaited<ReturnType<typeof startBenchRedis>>['client'],
  prefix: string,
  batchId: string,
  timeoutMs: number,
): Promise<{ at: number; hgets: number }> {
  const k = keys(prefix);
  const ids = await client.zrange(k.batchRows(batchId), 0, -1);
  const deadline = Date.now() + timeoutMs;
  let hgets = 0;
  for (;;) {
    const pipe = client.pipeline();
    for (const id of ids) pipe.hget(k.transfer(batchId, id), 'intent_status');
    hgets += ids.length;
    const states = ((await pipe.exec()) ?? []).map(([, v]) => v);
    if (states.every((s) => s === 'complete')) return { at: Date.now(), hgets: hgets + 1 };
    if (Date.now() > deadline) throw new Error(`cctp: not every row minted after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

type BenchRedis = Awaited<ReturnType<typeof startBenchRedis>>;

/** One batch of `rows` enqueued into a running worker's Redis, burned and minted: what it cost. */
async function oneBatch(
  ctx: Context,
  redis: BenchRedis,
  env: ReturnType<typeof productEnv>,
  group: ReturnType<typeof startWorkers>,
  p: { rows: number; tag: string },
): Promise<CctpRun> {
  const prefix = 'usdc';
  const rows = evmRows(p.rows, ['BASE'], p.tag, 'ARB');
  const memory0 = (await settledMemory(redis.client)).used;
  const { batchId } = await enqueueFile(writeCsv(ctx.dir, `${p.tag}.csv`, rows), env);
  await redis.client.config('RESETSTAT');
  const processes = {
    workers: group.processes.map((w) => w.child.pid),
    sandbox: ctx.sandbox.child.pid,
    redis: redis.pids(),
  };
  const reading0 = readCpu(processes);
  const own = await waitBatchComplete(redis.client, prefix, batchId, group, 600_000);
  const minted = await waitMinted(redis.client, prefix, batchId, 300_000);
  const cpu = cpuSpent(reading0, readCpu(processes), rows.length);
  // The bench's own reads (its HGETs and the ZRANGE) are not the product's.
  const calls = withoutOwn(await commandCalls(redis.client), 'hget', own + minted.hgets);
  const outcome = await batchOutcome(redis.client, prefix, batchId);
  if (outcome.notSubmitted > 0) throw new Error(`cctp: ${outcome.notSubmitted} rows not burned`);
  const memory1 = (await settledMemory(redis.client)).used;
  const first =
    Number(await redis.client.hget(keys(prefix).batch(batchId), 'completed_at')) - outcome.windowMs;
  const cycle = await burnCycle(redis, prefix, batchId);
  return {
    burnsPerSecond: outcome.perSecond,
    burnWindowMs: outcome.windowMs,
    mintedWindowMs: minted.at - first,
    commandsPerTransfer: totalCalls(calls) / rows.length,
    topCommands: topCommands(calls, rows.length),
    bytesPerTransfer: (memory1 - memory0) / rows.length,
    cpu,
    cycle,
  };
}

const SENT = / burn: burn (0x[0-9a-f]+) sent /;
const MINED = / burn: burn (0x[0-9a-f]+) mined: /;

/**
 * The burns' sends and receipts in time order, from the batch's BASE job logs (each line stamped
 * when the run reported it: job-reporter.ts), as medians over the batch's consecutive burns.
 */
async function burnCycle(redis: BenchRedis, prefix: string, batchId: string): Promise<BurnCycle | undefined> {
  const ids = await redis.client.zrange(keys(prefix).batchRows(batchId), 0, -1);
  const pipe = redis.client.pipeline();
  for (const id of ids) pipe.lrange(`${prefix}:${queueNameFor('BASE')}:${batchId}/${id}:logs`, 0, -1);
  const burns: { sent: number; mined: number }[] = [];
  for (const [, lines] of (await pipe.exec()) ?? []) {
    let sent: number | undefined;
    let mined: number | undefined;
    for (const line of (lines as string[] | null) ?? []) {
      const at = Date.parse(line.slice(0, line.indexOf(' ')));
      if (SENT.test(line)) sent = at;
      else if (MINED.test(line)) mined = at;
    }
    if (sent !== undefined && mined !== undefined) burns.push({ sent, mined });
  }
  burns.sort((a, b) => a.sent - b.sent);
  if (burns.length < 2) return undefined;
  const median = (v: number[]) => v.sort((a, b) => a - b)[Math.floor(v.length / 2)] ?? 0;
  return {
    sentToMinedMs: median(burns.map((b) => b.mined - b.sent)),
    minedToNextSentMs: median(burns.slice(1).map((b, i) => b.sent - (burns[i] as { mined: number }).mined)),
  };
}

/**
 * 12. The CCTP road (docs/cctp.md): `rows` transfers of one (chain, owner), BASE → ARB, on
 * `cctp-fast` against the sandbox's CCTP contracts and attestation API, one worker. One transfer's
 * approve and burn hold the owner's lease until the burn's receipt, so one owner burns at most one
 * row per block on a live chain, and on the sandbox's (which mine at once) one per first look at a
 * sent burn (owner-call.ts FIRST_LOOKS_MS): that is the bound. Redis commands and memory are per transfer, burn and mint;
 * each run enqueues a second batch of the same size into the same worker and Redis once the first is
 * minted: its cost is the marginal one (the fixed costs — the script cache, the worker's own keys —
 * are already paid).
 */
export async function benchCctp(ctx: Context, p: { rows: number; runs: number }): Promise<CctpResult> {
  const runs: CctpRun[] = [];
  const marginal: CctpRun[] = [];
  const retained: RetainedBytes[] = [];
  for (let i = 0; i < p.runs; i++) {
    const redis = await startBenchRedis();
    try {
      await ctx.sandbox.admin.reset();
      const env = productEnv({
        redisUrl: redis.url,
        prefix: 'usdc',
        sandbox: ctx.sandbox,
        solanaKeyFile: ctx.solanaKeyFile,
        extra: { TRANSFER_VIA: 'cctp-fast', CCTP_API_URL: `${ctx.sandbox.url}/cctp` },
      });
      const group = startWorkers(1, env);
      try {
        runs.push(await oneBatch(ctx, redis, env, group, { rows: p.rows, tag: `cctp${i}` }));
        marginal.push(await oneBatch(ctx, redis, env, group, { rows: p.rows, tag: `cctp${i}b` }));
        retained.push(await retainedBytes(redis, 'usdc', 2 * p.rows));
        ctx.log(
          `cctp run ${i + 1}: ${runs.at(-1)?.burnsPerSecond.toFixed(2)} burns/s (bound ${(1000 / FIRST_LOOK_MS).toFixed(0)}/s; sent → mined ${runs.at(-1)?.cycle?.sentToMinedMs ?? '?'} ms, mined → next sent ${runs.at(-1)?.cycle?.minedToNextSentMs ?? '?'} ms), ${runs.at(-1)?.commandsPerTransfer.toFixed(0)} commands per transfer (second batch ${marginal.at(-1)?.commandsPerTransfer.toFixed(0)}, ${((marginal.at(-1)?.bytesPerTransfer ?? 0) / 1024).toFixed(1)} KiB)`,
        );
      } finally {
        await group.stop();
      }
    } finally {
      await redis.stop();
    }
  }
  return {
    rows: p.rows,
    bound: 1000 / FIRST_LOOK_MS,
    firstLookMs: FIRST_LOOK_MS,
    runs,
    marginal,
    retained,
  };
}

/** The row of what a minted transfer keeps for good, where the results have it. */
function retainedLines(r: CctpResult): string[] {
  const of = r.retained ?? [];
  if (of.length === 0) return [];
  const med = (f: (x: RetainedBytes) => number) =>
    of.map(f).sort((a, b) => a - b)[Math.floor(of.length / 2)] ?? 0;
  const total = med((x) => x.records + x.ownerTxs + x.other);
  return [
    `| Redis memory a minted transfer keeps for good, once BullMQ drops its job (Σ \`MEMORY USAGE\` of the records, the owner's transactions, payout ids and batch keys / the run's ${2 * r.rows} transfers) | ${(total / 1024).toFixed(2)} KiB: record ${med((x) => x.records).toFixed(0)} B, the owner's approve share, burn and mint ${med((x) => x.ownerTxs).toFixed(0)} B, payout id and batch keys ${med((x) => x.other).toFixed(0)} B |`,
  ];
}

/** The cycle of one owner's burns, where the results have it. */
function cycleLines(r: CctpResult): string[] {
  const cycles = r.runs.map((x) => x.cycle).filter((c): c is BurnCycle => c !== undefined);
  if (cycles.length === 0) return [];
  const med = (f: (c: BurnCycle) => number) =>
    cycles.map(f).sort((a, b) => a - b)[Math.floor(cycles.length / 2)] ?? 0;
  return [
    `| … a burn sent → its receipt seen by the worker (median, first batch) | ${med((c) => c.sentToMinedMs).toFixed(0)} ms |`,
    `| … a burn's receipt seen → the owner's next burn sent (the serial section) | ${med((c) => c.minedToNextSentMs).toFixed(0)} ms |`,
  ];
}

/** The report's section 12. */
export function cctpReport(r: CctpResult, loadBefore: string): string[] {
  const med = (f: (x: CctpRun) => number, of: readonly CctpRun[] = r.runs) => {
    const v = of.map(f).sort((a, b) => a - b);
    return v[Math.floor(v.length / 2)] ?? 0;
  };
  const pace = med((x) => x.burnsPerSecond);
  return [
    '## 12. The CCTP road: one owner, burn and mint',
    '',
    `${r.rows} transfers BASE → ARB on \`cctp-fast\` (docs/cctp.md), one owner, one worker, against the sandbox's CCTP v2 contracts on its anvils and its attestation API (Fast: attested at once). Every step is the owner's own transaction: one approval for the batch's rows, a burn per row on BASE, a mint per row on ARB. Load average before the run: ${loadBefore}.`,
    '',
    '| measure | value |',
    '|---|---|',
    `| burns per second, one (chain, owner) | ${pace.toFixed(2)}/s (bound: one burn per first look at a sent burn, ${r.firstLookMs ?? 1000} ms after it, on chains that mine at once → ${r.bound.toFixed(0)}/s: ${pace <= r.bound * 1.05 ? 'within it' : 'above it'}, at ${((pace / r.bound) * 100).toFixed(0)} %) |`,
    ...cycleLines(r),
    `| first transfer taken → last burn mined | ${(med((x) => x.burnWindowMs) / 1000).toFixed(1)} s |`,
    `| first transfer taken → last mint (every intent \`complete\`) | ${(med((x) => x.mintedWindowMs) / 1000).toFixed(1)} s |`,
    `| Redis commands per transfer (burn and mint; Lua-internal calls included), first batch | ${med((x) => x.commandsPerTransfer).toFixed(0)} |`,
    `| Redis commands per transfer, a second batch into the same worker (marginal) | ${med((x) => x.commandsPerTransfer, r.marginal).toFixed(0)} |`,
    `| Redis memory per transfer once minted, its job kept (used_memory after − before; clients' and AOF buffers apart), first batch | ${(med((x) => x.bytesPerTransfer) / 1024).toFixed(1)} KiB |`,
    `| Redis memory per transfer, the second batch (marginal: fixed costs already paid) | ${(med((x) => x.bytesPerTransfer, r.marginal) / 1024).toFixed(1)} KiB |`,
    ...retainedLines(r),
    '',
    `Top commands per transfer, first batch: ${r.runs[0]?.topCommands ?? '—'}; second batch: ${r.marginal[0]?.topCommands ?? '—'}.`,
    '',
    ...cpuShareLines('from the batch enqueued to its last mint', [
      { label: 'first batch', runs: r.runs.map((x) => x.cpu) },
      { label: 'second batch', runs: r.marginal.map((x) => x.cpu) },
    ]),
    '',
    "Why the bound: a transfer takes its owner's (chain, owner) lease for its approve and burn and keeps it until the burn's receipt (one burn signed per transfer, nonces in order), so one owner burns at most one row per block on a live chain (Base about one every 2 s, Arbitrum four a second). The sandbox's anvils mine each transaction at once, so there the bound is the worker's first look for the receipt, 250 ms after the send, then 250 ms and 500 ms later, then every second (owner-call.ts `watchDelayMs`; until the report of b26cf94 the worker looked every second from the start, and this section measured 0.77 burns/s against a bound it then called one block a second). The rest of a burn's cycle is the owner's serial section: the next transfer takes the lease, reads the allowance and the owner's nonce, signs and sends (the sandbox answers RPC after its latency). More owners (EVM_PRIVATE_KEY with several keys) or more source chains multiply it, as for the service's permits (sections 3 and 7). The mints run in the intent follower, beside the burns, and do not hold the lease. `BENCH_ONLY=cctp npm run bench` runs this section alone.",
    '',
    "Where a cycle's time goes, read on the sandbox's RPC log (30 November 2026, this section at 20 ms per call; each sequential read is a round of that latency, ~25 ms here): after the burn is sent, the first look at 250 ms — the owner's nonce, then the receipt, which now ends the look (the head, fees and balance it read after the receipt too went with 22d0797: sent → receipt seen 301 ms instead of ~327, 1.9 burns/s instead of 1.8, minutes apart); then the next transfer's serial section, seven rounds before its send: the owner's calls not yet mined (its nonce), the allowance, the pending nonce, the facts its nonce is given on (the nonce; the head, fees and balance together), and the first step of its transaction at that nonce (the same two again). Since f086e66 that first step reads only the nonce and the head again, in one round, and decides on the fees and balance its nonce was given on (receipt seen → next burn sent 186–189 ms instead of 202–207, 1.97 burns/s, minutes apart); the nonce read stays, as the chain's word that the nonce is still free (and the read at which the fault test of a mint call given a nonce and never signed kills its worker, cctp-faults.test.ts). Since 5461dc9 the facts a nonce is given on — the pending nonce, the owner's nonce, the head, fees and balance — are read in one round instead of three (nothing of the call is signed yet, so no receipt waits on the nonce read): receipt seen → next burn sent 123–124 ms instead of 170, 2.29–2.30 burns/s instead of 2.06 (one run each, minutes apart). Since a816dff a look reads the receipt first, and the owner's nonce only without one (then the receipts again only when the nonce is used: the order the decision rests on): the first look after a send is one round where it was two — sent → receipt seen 277 ms instead of 298–300, 2.37–2.39 burns/s (two runs, minutes apart). Since e17e0c0 the allowance is read beside the look for the owner's unmined calls, its answer taken where every call the look finds mined was seen mined by the worker before the read went (docs/cctp.md \"The flow\"): receipt seen → next burn sent 114–119 ms instead of 140, 2.42–2.45 burns/s instead of 2.29 (`BENCH_ONLY=cctp`, three runs, 1 December 2026, against the full report of 21f0965 on the same host).",
    '',
    "Memory. Until 242493b and 6294025 a minted transfer on this road kept 8.37 KiB for good (the row above, measured on the code before: record 2,369 B, the owner's transactions 6,038 B): its record stayed a `hashtable` (its intent id, `cctp:<domain>:0x<burn tx>`, is 73 characters, over the default `hash-max-listpack-value` of 64), and each approve, burn and mint of the owner kept its calldata and every signed version (a mint's are ~2.6 KB). The intent id is now stored in two fields, as a Solana signature is, and a mined transaction keeps what says which call it was and how it went — its call id, target and value, its calldata's digest, each version's hash and fees, its receipt — and drops the rest (docs/cctp.md \"The owner's transactions\"). Measured as here (clients' and AOF buffers apart: a running worker's connections moved `used_memory` by ±170 KB between two readings), the code before read 16.0–16.1 KiB per transfer for the first batch and 12.1 for the second (two runs, minutes apart). What is left besides the kept job (its hash with the outcome object and its step log, ~2.7 KiB while BullMQ keeps it) is the row above: the record, with the road's fields, and the owner's transactions, ~0.8 KiB each in a `hashtable` of eight short fields per nonce.",
  ];
}
