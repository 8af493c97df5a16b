import { createReadStream, statSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { setFlagsFromString } from 'node:v8';
import type { Config } from '../../config/config.ts';
import { readEnv } from '../../config/env-reader.ts';
import { loadConfig } from '../../config/load-config.ts';
import { ValidationError } from '../../domain/errors.ts';
import { formatUsdc, tryParseUsdc } from '../../domain/money.ts';
import { FINAL_STATES, TRANSFER_STATES, type TransferRequest } from '../../domain/transfer.ts';
import { dryRunBatch, type DryRunReport } from '../../ingest/dry-run.ts';
import { BatchConflictError, enqueueValidated, type EnqueueOutcome } from '../../ingest/enqueue-batch.ts';
import type { NewRecipientTotal } from '../../ingest/hold-rules.ts';
import type { WholeInputRefusal } from '../../ingest/ingest-issue.ts';
import { onRoad } from '../../ingest/road-rows.ts';
import { loadScreen } from '../../ops/screening-watch.ts';
import { validateCsv, type ValidatedInput } from '../../ingest/validate-input.ts';
import { createLogger, type Logger } from '../../log/logger.ts';
import { BATCH_ID_PATTERN, BATCH_ID_RULE } from '../../domain/ids.ts';
import type { TransferRoad } from '../../domain/roads.ts';
import type { readWallets } from '../../ops/wallets.ts';
import {
  availableText,
  balancePreflightOf,
  ownersText,
  preflightJson,
  preflightWarning,
  type ChainPreflight,
} from '../../ops/balance-preflight.ts';
import { createBatchReader } from '../../present/batch-status.ts';
import { pausedView, type BatchSummary } from '../../present/batch-summary.ts';
import { readPause } from '../../store/pause-flag.ts';
import { createRedis } from '../../store/redis.ts';
import { warnOnWorkerControls, withCli, type CliContext } from '../context.ts';
import { intentsText, outcomeText, pausedSince, settledText, totalsLines } from '../batch-text.ts';
import { EXIT } from '../exit-codes.ts';
import { issueReport, jsonText, progressBar, table } from '../format.ts';
import { counted } from '../../domain/plural.ts';
import { parseOptions, roadOption, type Options } from '../options.ts';

/** The options of `enqueue` (docs/operating.md "The commands"), parsed by parseOptions. */
const ENQUEUE_OPTIONS = {
  batchId: 'text',
  via: 'text',
  skipInvalid: 'flag',
  allowDuplicates: 'flag',
  expectRows: 'text',
  expectTotal: 'text',
  dryRun: 'flag',
  wait: 'flag',
  json: 'flag',
} as const;

type EnqueueFlags = Options<typeof ENQUEUE_OPTIONS>;

// Files above this size report validation progress on stderr even when it is not a terminal.
const LARGE_FILE_BYTES = 4 * 1024 * 1024;
const WAIT_POLL_MS = 500;

const usage = (code: string, message: string) => new ValidationError(`USDC_USAGE_${code}`, message);

/**
 * `usdc-batch enqueue FILE.csv`: validates the whole file, then enqueues it as one batch (docs/operating.md "The commands"). Exit 0 enqueued (or already enqueued), 1 rejected (or, with --wait, some transfer did not
 * succeed), 2 usage/configuration, 3 conflict. `--json` prints exactly one document on stdout.
 */
export async function run(args: string[], options: Record<string, unknown>): Promise<number> {
  const flags = parseOptions(ENQUEUE_OPTIONS, options);
  boundHeapGrowth();
  const file = parseFileArgs(args, flags);
  if (flags.dryRun) {
    // The service's settings are needed only where the road is the service's.
    const env = readEnv();
    const via = file.via ?? loadConfig(env).transferVia;
    const config = loadConfig(env, { service: via === 'service' });
    const logger = createLogger(config.logLevel, undefined, config.logFormat);
    const input = onRoad(await validateFile(config, file), via);
    return await dryRun(config, logger, input, flags, via);
  }
  return await withCli({}, async (ctx) => {
    await warnOnWorkerControls(ctx);
    return await enqueueFile(ctx, await validateFile(ctx.config, file), flags, file.via);
  });
}

/** The file and the flags that bound its validation, checked before anything is read. */
type FileArgs = {
  readonly path: string;
  readonly size: number;
  readonly expectRows: number | undefined;
  readonly expectTotal: bigint | undefined;
  readonly allowDuplicates: boolean;
  /** `--via`: undefined for TRANSFER_VIA's road. */
  readonly via: TransferRoad | undefined;
};

function parseFileArgs(args: string[], flags: EnqueueFlags): FileArgs {
  const file = args[0];
  if (!file) throw usage('FILE_MISSING', 'enqueue needs a CSV file');
  if (flags.batchId !== undefined && !BATCH_ID_PATTERN.test(flags.batchId)) {
    throw usage('BATCH_ID', `--batch-id must be ${BATCH_ID_RULE}`);
  }
  let expectRows: number | undefined;
  if (flags.expectRows !== undefined) {
    if (!/^[0-9]{1,9}$/.test(flags.expectRows))
      throw usage('EXPECT_ROWS', '--expect-rows must be a whole number');
    expectRows = Number(flags.expectRows);
  }
  let expectTotal: bigint | undefined;
  if (flags.expectTotal !== undefined) {
    const r = tryParseUsdc(flags.expectTotal, { allowZero: true });
    if (!r.ok) throw usage('EXPECT_TOTAL', `--expect-total ${r.reason}`);
    expectTotal = r.value;
  }
  let size: number;
  try {
    const st = statSync(file);
    if (!st.isFile()) throw usage('FILE', `${file} is not a file`);
    size = st.size;
  } catch (err) {
    if (err instanceof ValidationError) throw err;
    throw usage('FILE', `cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  return {
    path: file,
    size,
    expectRows,
    expectTotal,
    allowDuplicates: flags.allowDuplicates === true,
    via: roadOption(flags.via),
  };
}

/** Validates the whole file, with progress on stderr on a terminal or for a large file. */
async function validateFile(config: Config, file: FileArgs): Promise<ValidatedInput> {
  const showProgress = process.stderr.isTTY || file.size > LARGE_FILE_BYTES;
  const input = await validateCsv(createReadStream(file.path), {
    maxTransferUsdc: config.maxTransferUsdc,
    screen: await loadScreen(config),
    expect: { rows: file.expectRows, total: file.expectTotal },
    allowDuplicates: file.allowDuplicates,
    parallel: file.size > LARGE_FILE_BYTES && spareCore(),
    onProgress: showProgress
      ? (rows) =>
          process.stderr.write(
            process.stderr.isTTY ? `\rvalidated ${rows} rows…` : `validated ${rows} rows\n`,
          )
      : undefined,
  });
  if (showProgress && process.stderr.isTTY && input.inputRows >= 10_000) process.stderr.write('\n');
  return input;
}

/**
 * Whether the address-check thread of a large file (validate-input.ts) would have a core to itself:
 * the last minute's load average leaves one idle. It saves the main thread the checks (~0.25 s of a
 * 100,000-row file) but costs ~0.4 s more CPU in all (messages both ways, the checks the main thread
 * does itself when the thread falls behind), so on a busy machine it slows the enqueue down, and the
 * Redis it shares the machine with (BENCHMARKS.md §1). The rows validate the same either way.
 */
function spareCore(): boolean {
  return (loadavg()[0] ?? 0) < availableParallelism() - 1;
}

/** Enqueues the validated file and prints the outcome (and, with --wait, the finished batch). */
async function enqueueFile(
  ctx: CliContext,
  input: ValidatedInput,
  flags: EnqueueFlags,
  via: TransferRoad | undefined,
): Promise<number> {
  let outcome: EnqueueOutcome;
  const jobs = await ctx.producer();
  try {
    outcome = await ctx.acknowledged(() =>
      enqueueValidated({ redis: ctx.redis, prefix: ctx.prefix, jobs, config: ctx.config }, input, {
        source: 'csv',
        actor: ctx.actor,
        batchId: flags.batchId,
        via,
        skipInvalid: flags.skipInvalid === true,
        allowDuplicates: flags.allowDuplicates === true,
      }),
    );
  } catch (err) {
    if (err instanceof BatchConflictError && flags.json) {
      printJson(conflictDocument(err, flags.batchId));
      process.stderr.write(`error: ${err.shortMessage}\n`);
      return EXIT.conflict;
    }
    throw err;
  }
  ctx.logger.debug(
    {
      batchId: outcome.batchId,
      status: outcome.status,
      accepted: outcome.accepted,
      created: outcome.created,
    },
    'enqueue finished',
  );
  if (flags.json && !flags.wait) printJson(outcomeDocument(outcome));
  else if (!flags.json) printOutcome(outcome);
  if (!flags.json && outcome.status !== 'rejected') {
    // Enqueued while paused: it says so, or "enqueued" would read as "on its way".
    const paused = pausedView(await readPause(ctx.redis, ctx.prefix));
    if (paused) {
      process.stdout.write(
        `\nprocessing is paused ${pausedSince(paused)}; nothing is sent until \`usdc-batch resume\`\n`,
      );
    }
  }
  if (outcome.status === 'rejected' || outcome.batchId === null) {
    if (flags.json && flags.wait) printJson(outcomeDocument(outcome));
    return EXIT.rejected;
  }
  if (!flags.wait) return EXIT.ok;
  const done = await waitForBatch(ctx, outcome.batchId, flags.json !== true);
  const { counts } = done;
  const unsuccessful = counts.failed + counts.rejected + counts.needs_review;
  if (flags.json) printJson(waitedDocument(outcome, done));
  else printWaited(outcome.batchId, done);
  return unsuccessful > 0 ? EXIT.rejected : EXIT.ok;
}

/** `--json` when the batch id is taken by other content: the one document, with the error. */
function conflictDocument(err: BatchConflictError, batchId: string | undefined) {
  return {
    batch_id: batchId ?? null,
    created: false,
    accepted: 0,
    rejected: 0,
    duplicates: 0,
    errors: [{ line: null, column: null, message: err.shortMessage }],
    error_count: 1,
    totals: { amount: '0.00' },
    error: { code: err.code, message: err.shortMessage },
  };
}

/**
 * Keeps the heap of a large enqueue near its live data. On a machine with memory to spare V8 lets
 * the old generation grow to about 4× what survived the last full GC and the young generation to
 * 2 × 32 MB, so a 100,000-row file (under 100 MB live) peaked at ~500 MB RSS, mostly garbage
 * waiting for a collection. Growing the old generation by at most 100% per full GC, and the young
 * generation no further than it is when the command starts, keeps that file near 260 MB for about
 * half a second more of collector time (BENCHMARKS.md §1). Both flags are read by V8 at each
 * collection, so setting them here works without restarting Node with command-line flags (a second
 * process start-up); they only pace collections and set no heap limit, so a larger file still fits.
 */
function boundHeapGrowth(): void {
  setFlagsFromString('--heap-growing-percent=100');
  setFlagsFromString('--semi-space-growth-factor=1');
}

function printJson(doc: unknown): void {
  process.stdout.write(`${jsonText(doc)}\n`);
}

function outcomeDocument(o: EnqueueOutcome) {
  return {
    batch_id: o.batchId,
    via: o.via,
    created: o.created,
    held: o.held,
    held_reason: o.heldReason,
    accepted: o.accepted,
    rejected: o.rejected,
    duplicates: o.duplicates,
    errors: o.errors,
    error_count: o.errorCount,
    totals: { amount: formatUsdc(o.totalAmount) },
  };
}

/**
 * `--wait --json`: the enqueue document with the finished batch's counts, `settled` and paid
 * totals (settlement usually comes later: `status` shows it then).
 */
function waitedDocument(o: EnqueueOutcome, done: BatchSummary) {
  const doc = outcomeDocument(o);
  return {
    ...doc,
    counts: done.counts,
    settled: done.settled,
    intents: done.intents,
    totals: { ...doc.totals, paid: done.totals.paid },
  };
}

function printWaited(batchId: string, done: BatchSummary): void {
  const lines = [
    '',
    `batch ${batchId} complete: ${outcomeText(done)}; intents settled: ${settledText(done.settled)}`,
    table(
      ['state', 'transfers'],
      FINAL_STATES.map((s) => [s, done.counts[s]]),
    ),
    intentsText(done.intents),
    ...totalsLines(done.totals),
  ];
  if (done.settled === false) lines.push(`(usdc-batch status ${batchId} shows when the money has arrived)`);
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** Why a file was refused as a whole, for the first line of the summary. */
const WHOLE_INPUT_TEXT: Record<WholeInputRefusal, string> = {
  header: 'the file was rejected for its header',
  syntax: 'the file was rejected: it is not valid CSV',
  empty: 'the file was rejected: it is empty',
  document: 'the input was rejected as a whole',
  control_total: 'the file was rejected: a control total does not match (--expect-rows, --expect-total)',
  no_rows: 'the file was rejected: it has no rows',
  batch_id: 'the file was rejected for its batch id',
  callback_url: 'the file was rejected for its callback_url',
  batch_total: "the file was rejected: the batch's total is above MAX_BATCH_USDC",
  no_valid_rows: 'the file was rejected: no row is valid',
};

function printOutcome(o: EnqueueOutcome): void {
  const out = (s: string) => process.stdout.write(`${s}\n`);
  if (o.status === 'rejected') {
    printRejected(o);
    return;
  }
  if (!o.created) out(`batch ${o.batchId}: already enqueued with the same rows; nothing added`);
  else
    out(
      `batch ${o.batchId}: ${o.resumed ? 'completed an interrupted enqueue' : 'enqueued'}${o.held ? ' (held for approval)' : ''}`,
    );
  if (o.held && o.heldReason) out(`  held        ${o.heldReason}`);
  out(`  via         ${o.via}`);
  out(`  accepted    ${o.accepted}`);
  out(`  rejected    ${o.rejected}`);
  out(`  duplicates  ${o.duplicates}`);
  out(`  total       ${formatUsdc(o.totalAmount)} USDC`);
  if (o.routes.length > 0) {
    out('');
    out(
      table(
        ['from', 'to', 'rows', 'amount'],
        o.routes.map((r) => [r.from, r.to, r.rows, formatUsdc(r.amount)]),
      ),
    );
  }
  process.stdout.write(issueReport(o.errors, o.errorCount));
}

/**
 * A rejected file: why, in words (a file refused for its header or a control total says so, not
 * "rejected 0"), the rows' counts when rows were judged, what a flag would change, then the problems.
 */
function printRejected(o: EnqueueOutcome): void {
  const out = (s: string) => process.stdout.write(`${s}\n`);
  out(`rejected: nothing was enqueued${o.wholeInput ? ` (${WHOLE_INPUT_TEXT[o.wholeInput]})` : ''}`);
  if (o.wholeInput === null || o.rejected > 0 || o.duplicates > 0) {
    out(`  rejected    ${o.rejected} invalid row${o.rejected === 1 ? '' : 's'}`);
    out(`  duplicates  ${o.duplicates} likely duplicate${o.duplicates === 1 ? '' : 's'}`);
    if (o.wholeInput === null) out(`  valid       ${o.validRows}`);
  }
  // A flag helps only when the file itself was usable.
  if (o.wholeInput === null) {
    if (o.rejected > 0 && o.validRows > 0)
      out(
        `  --skip-invalid would enqueue the ${o.validRows} valid row${o.validRows === 1 ? '' : 's'} and report the rest`,
      );
    if (o.duplicates > 0)
      out(
        '  --allow-duplicates would accept the likely duplicates (rows without an id that repeat another payment): only if they are meant to be paid again',
      );
  }
  process.stdout.write(issueReport(o.errors, o.errorCount));
}

/** Polls the batch record's counters (never the transfers) until `complete`. */
async function waitForBatch(ctx: CliContext, batchId: string, showBar: boolean): Promise<BatchSummary> {
  const reader = createBatchReader({ redis: ctx.redis, prefix: ctx.prefix });
  const tty = process.stderr.isTTY;
  let lastLine = 0;
  for (;;) {
    const b = await reader.summary(batchId);
    if (!b) throw new ValidationError('USDC_BATCH_NOT_FOUND', `batch ${batchId} disappeared while waiting`);
    const counts = b.counts;
    const rows = TRANSFER_STATES.reduce((n, s) => n + counts[s], 0);
    const done = FINAL_STATES.reduce((n, s) => n + counts[s], 0);
    if (showBar && (tty || b.complete || Date.now() - lastLine > 5_000)) {
      lastLine = Date.now();
      const held = b.held ? ' (held for approval)' : '';
      const cancelled = counts.cancelled > 0 ? ` cancelled ${counts.cancelled}` : '';
      const line = `${progressBar(done, rows)} submitted ${counts.submitted} failed ${counts.failed} rejected ${counts.rejected} review ${counts.needs_review}${cancelled}${held}`;
      process.stderr.write(tty ? `\r${line}` : `${line}\n`);
    }
    if (b.complete) {
      if (showBar && tty) process.stderr.write('\n');
      return b;
    }
    await new Promise((r) => setTimeout(r, WAIT_POLL_MS));
  }
}

/**
 * Validates and estimates every row on the batch's road (ingest/dry-run.ts: the service's estimate,
 * or Circle's fee route on a CCTP road), and prints what it found.
 */
async function dryRun(
  config: Config,
  logger: Logger,
  input: ValidatedInput,
  flags: EnqueueFlags,
  via: TransferRoad,
): Promise<number> {
  const tty = process.stderr.isTTY;
  const report = await dryRunBatch(config, logger, input, {
    via,
    skipInvalid: flags.skipInvalid === true,
    onEstimated: (done, total) => {
      if (tty && done % 100 === 0) process.stderr.write(`\restimated ${done}/${total}`);
    },
  });
  if (tty && report.transfers.length >= 100) process.stderr.write('\n');
  const balances = await balancePreflight(config, report.transfers);
  if (flags.json) printJson(dryRunDocument(report, balances));
  else printDryRun(report, balances, config);
  return report.succeeded ? EXIT.ok : EXIT.rejected;
}

function dryRunDocument(r: DryRunReport, balances: readonly ChainPreflight[]) {
  return {
    batch_id: null,
    created: false,
    dry_run: true,
    via: r.via,
    // Who pays the chains' gas: the service (its fee includes it) or, on a CCTP road, each owner.
    gas_paid_by: r.via === 'service' ? 'service' : 'owner',
    accepted: r.accepted,
    rejected: r.rejected,
    duplicates: r.duplicates,
    errors: r.errors,
    error_count: r.errorCount,
    totals: {
      amount: formatUsdc(r.totals.amount),
      fee: formatUsdc(r.totals.fee),
      net_receive: formatUsdc(r.totals.netReceive),
    },
    over_fee_cap: r.overFeeCap,
    new_recipients:
      r.newRecipients?.map((n) => ({
        address: n.address,
        rows: n.rows,
        amount: formatUsdc(n.amount),
        removed: n.removed,
      })) ?? null,
    balances: balances.map(preflightJson),
  };
}

function printDryRun(r: DryRunReport, balances: readonly ChainPreflight[], config: Config): void {
  const out = (s: string) => process.stdout.write(`${s}\n`);
  out(
    r.rejectedInput
      ? 'dry run: the file would be rejected; nothing was estimated'
      : 'dry run: nothing was written, signed or sent',
  );
  out(`  rows        ${r.estimated} estimated of ${r.inputRows}`);
  out(`  rejected    ${r.rejected}`);
  out(`  duplicates  ${r.duplicates}`);
  out(`  total       ${formatUsdc(r.totals.amount)} USDC`);
  out(`  road        ${r.via}`);
  out(`  fee         ${formatUsdc(r.totals.fee)} USDC${feeSource(r.via)}`);
  out(`  net         ${formatUsdc(r.totals.netReceive)} USDC`);
  if (r.via !== 'service')
    out(
      '  gas         paid by the owners in native gas on both chains (approve, burn, mint): not in the fee',
    );
  if (r.overFeeCap > 0)
    out(`  ${counted(r.overFeeCap, 'row')} over the fee cap (MAX_FEE_BPS / MAX_FEE_USDC) would be rejected`);
  printNewRecipients(r.newRecipients, config);
  if (r.routes.length > 0) {
    out('');
    out(
      table(
        ['from', 'to', 'rows', 'amount'],
        r.routes.map((route) => [route.from, route.to, route.rows, formatUsdc(route.amount)]),
      ),
    );
  }
  printBalances(balances);
  process.stdout.write(issueReport(r.errors, r.errorCount));
}

/** Whose fee the dry run shows on a CCTP road: Circle's at the road's finality (the service's: said by nothing). */
function feeSource(via: TransferRoad): string {
  if (via === 'service') return '';
  return ` (Circle's CCTP fee, ${via === 'cctp-fast' ? 'Fast: finality 1000' : 'Standard: finality 2000'})`;
}

function printBalances(balances: readonly ChainPreflight[]): void {
  if (balances.length === 0) return;
  const out = (s: string) => process.stdout.write(`${s}\n`);
  out('');
  // The owners column only when some chain has several owners: one key prints as before.
  const several = balances.some((b) => b.owners.length > 1);
  out(
    table(
      ['source', 'needed', 'available', '', ...(several ? ['owners'] : [])],
      balances.map((b) => [
        b.chain,
        formatUsdc(b.needed),
        availableText(b),
        { ok: 'ok', short: 'NOT COVERED', rebalance: 'REBALANCE', unknown: '' }[b.verdict],
        ...(several ? [ownersText(b)] : []),
      ]),
    ),
  );
  for (const b of balances) {
    const warning = preflightWarning(b);
    if (warning) out(warning);
  }
}

/**
 * Needed vs available per source chain (ops/balance-preflight.ts): EVM balances over
 * `EVM_RPC_URL_<CHAIN>` (`balanceOf` of every treasury owner, summed, and whether the rows split
 * over them), Solana over `SOLANA_RPC_URL`; unknown where no RPC (or no treasury address) tells.
 * The addresses are public ones (docs/keys.md): the configuration's, else what
 * the workers published, read over one short-lived Redis connection (a dry run needs no Redis).
 */
async function balancePreflight(
  config: Config,
  transfers: readonly TransferRequest[],
): Promise<ChainPreflight[]> {
  if (transfers.length === 0) return [];
  let report: Awaited<ReturnType<typeof readWallets>> | undefined;
  const redis = createRedis(config, {
    role: 'client',
    extra: { retryStrategy: () => null, maxRetriesPerRequest: 0, connectTimeout: 2_000 },
  });
  try {
    const wallets = await import('../../ops/wallets.ts');
    report = await wallets.readWallets({ config, redis });
  } catch {
    report = undefined;
  } finally {
    redis.disconnect();
  }
  return balancePreflightOf(transfers, report);
}

function printNewRecipients(fresh: readonly NewRecipientTotal[] | null, config: Config): void {
  const out = (s: string) => process.stdout.write(`${s}\n`);
  if (fresh === null) {
    out('  new recipients: not checked (Redis, where the address book is, did not answer)');
    return;
  }
  if (fresh.length === 0) {
    out('  new recipients: none (every recipient is in the address book)');
    return;
  }
  const effect = {
    allow: 'paid and flagged',
    hold: 'the batch would be held for approval',
    reject: 'their rows would be refused',
  }[config.newRecipientPolicy];
  out(
    `  new recipients: ${fresh.length} not in the address book (NEW_RECIPIENT_POLICY=${config.newRecipientPolicy}: ${effect})`,
  );
  out('');
  out(
    table(
      ['new recipient', 'rows', 'amount', ''],
      fresh.map((r) => [r.address, r.rows, formatUsdc(r.amount), r.removed ? 'REMOVED from the book' : '']),
    ),
  );
}
