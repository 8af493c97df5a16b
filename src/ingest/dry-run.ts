import type { Config } from '../config/config.ts';
import { errorMessage } from '../domain/errors.ts';
import { feeCapBreach } from '../domain/fee-cap.ts';
import { inLanes } from '../domain/pool.ts';
import type { TransferRoad } from '../domain/roads.ts';
import type { TransferRequest } from '../domain/transfer.ts';
import type { Logger } from '../log/logger.ts';
import { ApiKeyRefusedError, isKeyRefusal } from '../service/service-error.ts';
import type { FeeEstimate } from '../service/types.ts';
import { createLocalRateLimiter } from '../store/rate-limiter.ts';
import { createRedis } from '../store/redis.ts';
import {
  newRecipientTotals,
  refusedByBook,
  screenRecipients,
  type NewRecipientTotal,
  type RecipientScreen,
} from './hold-rules.ts';
import type { IngestIssue } from './ingest-issue.ts';
import { firstIssues } from './issue-list.ts';
import { routeTotals, type RouteTotal } from './route-totals.ts';
import type { ValidatedInput } from './validate-input.ts';

/** Estimates in flight at once: enough to keep the service busy without flooding it. */
const DRY_RUN_CONCURRENCY = 8;

export type DryRunOptions = {
  readonly skipInvalid?: boolean | undefined;
  /** The batch's road (default the service): a CCTP road is estimated with Circle's fee route. */
  readonly via?: TransferRoad | undefined;
  /** Called after each row's estimate (progress on a terminal). */
  readonly onEstimated?: ((done: number, total: number) => void) | undefined;
};

/** What `enqueue --dry-run` found: nothing was written, signed or sent. */
export type DryRunReport = {
  /** The road estimated: on a CCTP road the fee is Circle's and the gas (not in it) the owners'. */
  readonly via: TransferRoad;
  /** The file would be rejected whole (strict, or a fatal problem): nothing was estimated. */
  readonly rejectedInput: boolean;
  readonly inputRows: number;
  /** Rows estimated. */
  readonly estimated: number;
  /** Rows an enqueue would accept (0 when it would reject the file). */
  readonly accepted: number;
  readonly rejected: number;
  readonly duplicates: number;
  /** The first problems in file order; `errorCount` counts every one. */
  readonly errors: IngestIssue[];
  readonly errorCount: number;
  /** Over the estimated rows. */
  readonly totals: { readonly amount: bigint; readonly fee: bigint; readonly netReceive: bigint };
  /** Estimated rows whose fee is over a cap (MAX_FEE_BPS / MAX_FEE_USDC): the worker would reject them. */
  readonly overFeeCap: number;
  /** Recipients not in the address book; `null` when Redis, where the book is, did not answer. */
  readonly newRecipients: NewRecipientTotal[] | null;
  /** Per route, over the estimated rows. */
  readonly routes: RouteTotal[];
  /** The rows that would be paid (after the book's refusals): what the balances must cover. */
  readonly transfers: readonly TransferRequest[];
  /** The enqueue would go ahead (exit 0). */
  readonly succeeded: boolean;
};

export type DryRunConfig = Pick<
  Config,
  | 'redisUrl'
  | 'redisSentinels'
  | 'redisSentinelName'
  | 'redisSentinelPassword'
  | 'redisClusterNodes'
  | 'queuePrefix'
  | 'newRecipientPolicy'
  | 'maxFeeBps'
  | 'maxFeeUsdc'
  | 'apiRateLimit'
  | 'transferApiUrl'
  | 'transferApiKey'
  | 'serviceConnectTimeoutMs'
  | 'serviceResponseTimeoutMs'
  | 'cctpApiUrl'
>;

/**
 * Validated input → what an enqueue would do, estimating every row through the service; nothing is
 * written, signed or sent. The address book is read where Redis answers (a dry run needs no Redis).
 */
export async function dryRunBatch(
  config: DryRunConfig,
  logger: Logger,
  input: ValidatedInput,
  options: DryRunOptions = {},
): Promise<DryRunReport> {
  const strict = !options.skipInvalid;
  const rejectedInput = input.fatal || (strict && (input.issues.length > 0 || input.duplicates.length > 0));
  const candidates = rejectedInput ? [] : input.transfers;
  // The address book, where Redis answers: which recipients are new, and what `reject` would refuse.
  const screen = await readAddressBook(config, candidates);
  const refused = screen && config.newRecipientPolicy === 'reject' ? refusedByBook(candidates, screen) : [];
  const refusedLines = new Set(refused.map((r) => r.line));
  const transfers = refused.length > 0 ? candidates.filter((t) => !refusedLines.has(t.line)) : candidates;
  const via = options.via ?? 'service';
  const estimated = await estimateRows(config, logger, transfers, options.onEstimated, via);
  const problems = [...input.issues, ...refused, ...input.duplicates, ...estimated.issues];
  const ok = !rejectedInput && estimated.issues.length === 0 && refused.length === 0 && transfers.length > 0;
  const count = estimated.estimates.size;
  return {
    via,
    rejectedInput,
    inputRows: input.inputRows,
    estimated: count,
    accepted: ok || options.skipInvalid ? count : 0,
    rejected: input.invalidRows + refused.length,
    duplicates: input.duplicates.length + input.omittedDuplicates,
    errors: firstIssues(problems),
    errorCount: problems.length + input.omittedIssues + input.omittedDuplicates,
    ...estimateTotals(config, transfers, estimated.estimates),
    newRecipients: screen ? newRecipientTotals(candidates, screen) : null,
    routes: routeTotals(transfers.filter((t) => estimated.estimates.has(t.line))),
    transfers,
    succeeded: ok || (options.skipInvalid === true && !input.fatal && count > 0),
  };
}

type RowEstimator = {
  readonly estimate: (t: TransferRequest) => Promise<FeeEstimate>;
  readonly close: () => void;
};

/**
 * The estimator of the batch's road: the service's `estimate`, or on a CCTP road Circle's fee route
 * (docs/cctp.md "Dry run and plan": asked once per route, the fee Circle's, the gas the owners').
 * Loaded here, not at the top: the HTTP clients cost time and memory to load, which a plain enqueue
 * of a large file does not need.
 */
async function rowEstimator(config: DryRunConfig, logger: Logger, via: TransferRoad): Promise<RowEstimator> {
  if (via !== 'service') {
    const { cctpFeeQuoterAt } = await import('../service/cctp-fee-quote.ts');
    const quote = cctpFeeQuoterAt(config.cctpApiUrl, via);
    return { estimate: (t) => quote(t.from, t.to, t.amount), close: () => {} };
  }
  const { createServiceClient } = await import('../service/service-client.ts');
  // A dry run needs no Redis, so it keeps its own requests under API_RATE_LIMIT by itself.
  const limiter = config.apiRateLimit ? createLocalRateLimiter(config.apiRateLimit) : undefined;
  const client = createServiceClient({
    baseUrl: config.transferApiUrl as string,
    apiKey: config.transferApiKey as NonNullable<Config['transferApiKey']>,
    connectTimeoutMs: config.serviceConnectTimeoutMs,
    responseTimeoutMs: config.serviceResponseTimeoutMs,
    logger,
    beforeRequest: limiter ? () => limiter.take() : undefined,
  });
  return {
    // Quiet: every failure is reported by the caller (a row's issue, or the key refused), not logged too.
    estimate: (t) => client.estimate({ from: t.from, to: t.to, amount: t.amount }, { quiet: true }),
    close: () => client.close(),
  };
}

/**
 * Each row's fee estimate, by line, DRY_RUN_CONCURRENCY at a time; a row whose estimate failed is
 * an issue at its line.
 */
async function estimateRows(
  config: DryRunConfig,
  logger: Logger,
  transfers: readonly TransferRequest[],
  onEstimated: DryRunOptions['onEstimated'],
  via: TransferRoad,
): Promise<{ readonly estimates: Map<number, FeeEstimate>; readonly issues: IngestIssue[] }> {
  const client = await rowEstimator(config, logger, via);
  const estimates = new Map<number, FeeEstimate>();
  const issues: IngestIssue[] = [];
  try {
    let done = 0;
    const estimateRow = async (t: TransferRequest) => {
      try {
        estimates.set(t.line, await client.estimate(t));
      } catch (err) {
        // A refused key is the configuration's problem, not the row's: the first one stops the run
        // (inLanes takes no new row), said once, naming TRANSFER_API_KEY (exit 2).
        if (isKeyRefusal(err)) throw new ApiKeyRefusedError(err);
        issues.push({ line: t.line, column: null, message: `estimate failed: ${errorMessage(err)}` });
      }
      onEstimated?.(++done, transfers.length);
    };
    // The first row alone: a refused key is found by one request, not by a lane's worth of them.
    const [first, ...rest] = transfers;
    if (first) await estimateRow(first);
    await inLanes(rest, DRY_RUN_CONCURRENCY, estimateRow);
  } finally {
    client.close();
  }
  return { estimates, issues };
}

/** Totals over the estimated rows, and how many of them the fee cap would reject. */
function estimateTotals(
  config: DryRunConfig,
  transfers: readonly TransferRequest[],
  estimates: ReadonlyMap<number, FeeEstimate>,
): Pick<DryRunReport, 'totals' | 'overFeeCap'> {
  let amount = 0n;
  let fee = 0n;
  let netReceive = 0n;
  let overFeeCap = 0;
  for (const t of transfers) {
    const e = estimates.get(t.line);
    if (!e) continue;
    amount += t.amount;
    fee += e.fee.total;
    netReceive += e.netReceive;
    if (feeCapBreach(e.fee.total, t.amount, config)) overFeeCap++;
  }
  return { totals: { amount, fee, netReceive }, overFeeCap };
}

/** `null` when Redis does not answer: a dry run needs no Redis, and says the book was not read. */
async function readAddressBook(
  config: DryRunConfig,
  transfers: readonly TransferRequest[],
): Promise<RecipientScreen | null> {
  if (transfers.length === 0) return null;
  // One attempt, soon given up: a dry run must not wait for a Redis that is not there.
  const redis = createRedis(config, {
    role: 'client',
    extra: { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, connectTimeout: 2_000 },
  });
  try {
    await redis.connect();
    return await screenRecipients(redis, config.queuePrefix, transfers);
  } catch {
    return null;
  } finally {
    redis.disconnect();
  }
}
