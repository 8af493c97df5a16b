import type { Redis } from 'ioredis';
import type { Config } from '../config/config.ts';
import { callbackUrlProblem } from '../domain/callback-url.ts';
import { ConflictError } from '../domain/errors.ts';
import { formatUsdc } from '../domain/money.ts';
import type { BatchSource, TransferRequest } from '../domain/transfer.ts';
import { BATCH_ID_PATTERN, BATCH_ID_RULE } from '../domain/ids.ts';
import {
  createBatchWriter,
  type BatchState,
  type DroppedRow,
  type TransferJobSink,
  type WriteOptions,
} from '../store/batch-writer.ts';
import { findPayoutOwners, findRecentPayments } from '../store/ingest-lookups.ts';
import { recordAudit } from '../store/audit.ts';
import { batchDigest, derivedBatchId, paymentFingerprint } from './batch-identity.ts';
import {
  decideHolds,
  refusedByBook,
  screenRecipients,
  type HoldConfig,
  type HoldDecision,
} from './hold-rules.ts';
import type { IngestIssue, WholeInputRefusal } from './ingest-issue.ts';
import { firstIssues } from './issue-list.ts';
import { routeTotals, type RouteTotal } from './route-totals.ts';
import type { ValidatedInput } from './validate-input.ts';

export type EnqueueDeps = {
  readonly redis: Redis;
  readonly prefix: string;
  readonly jobs: TransferJobSink;
  readonly config: Pick<Config, 'maxBatchUsdc' | 'callbackAllowedHosts'> & HoldConfig;
  readonly now?: () => number;
};

export type EnqueueOptions = {
  readonly source: BatchSource;
  /** Who asked (audit log): `cli:<os user>` or `http:hook`. */
  readonly actor: string;
  readonly batchId?: string | undefined;
  readonly skipInvalid?: boolean | undefined;
  readonly allowDuplicates?: boolean | undefined;
  readonly callbackUrl?: string | undefined;
  /** Batches that are not "other" for the likely-duplicate rule (a schedule's other firings). */
  readonly sameFamily?: ((batchId: string) => boolean) | undefined;
  /** Reasons to hold the batch that the caller knows of (a schedule's earlier firing still held). */
  readonly holdReasons?: readonly string[] | undefined;
  /** Book keys of the treasury's own addresses: always known recipients (rebalancing). */
  readonly ownAddresses?: ReadonlySet<string> | undefined;
  /** Passed to the writer (chunking; fault injection in tests). */
  readonly write?: Omit<WriteOptions, 'onOwnedPayout'> | undefined;
};

/** The result of an enqueue, as `enqueue --json` and `POST /v1/batches` report it. */
export type EnqueueOutcome = {
  readonly status: 'enqueued' | 'rejected';
  /** Null when the input was rejected before it had an identity. */
  readonly batchId: string | null;
  /** False when the same batch was already enqueued: this run added nothing. */
  readonly created: boolean;
  /** An earlier, interrupted run of the same batch was completed by this one. */
  readonly resumed: boolean;
  readonly held: boolean;
  readonly heldReason: string | null;
  readonly accepted: number;
  readonly rejected: number;
  readonly duplicates: number;
  /** The first problems in file order (MAX_LISTED_ISSUES): invalid rows, duplicates, the input's. */
  readonly errors: IngestIssue[];
  /** Every problem found, listed in `errors` or not (`error_count`). */
  readonly errorCount: number;
  readonly totalAmount: bigint;
  readonly routes: RouteTotal[];
  /** Rejected as a whole (its header, a control total, …): why; null when rows were judged on their own. */
  readonly wholeInput: WholeInputRefusal | null;
  /**
   * Valid rows that are not likely duplicates: what `--skip-invalid` would enqueue of a rejected
   * input (the Redis-side refusals aside).
   */
  readonly validRows: number;
};

/** A batch id reused with other content (CLI exit 3, HTTP 409). */
export class BatchConflictError extends ConflictError {
  override name = 'BatchConflictError';
  constructor(batchId: string) {
    super(
      'USDC_BATCH_CONFLICT',
      `batch ${batchId} already exists with different content; use another --batch-id`,
      { meta: { batchId } },
    );
  }
}

/**
 * Turns validated input into a batch: the Redis-side rules (likely duplicates of recent transfers,
 * payout ids owned by other batches, the batch cap, approval), then the writer. Strict unless
 * `skipInvalid`: any problem rejects the input whole and nothing is written.
 */
export async function enqueueValidated(
  deps: EnqueueDeps,
  input: ValidatedInput,
  options: EnqueueOptions,
): Promise<EnqueueOutcome> {
  const now = deps.now ?? Date.now;
  const issues: IngestIssue[] = [...input.issues];
  const duplicates: IngestIssue[] = [...input.duplicates];
  let rejectedRows = input.invalidRows;
  let wholeInput: WholeInputRefusal | null = input.refusal;

  if (options.batchId !== undefined && !BATCH_ID_PATTERN.test(options.batchId)) {
    wholeInput ??= 'batch_id';
    issues.push({
      line: null,
      column: 'batch_id',
      message: `batch id must be ${BATCH_ID_RULE}`,
    });
  }
  let callbackUrl: string | null = null;
  if (options.callbackUrl !== undefined) {
    const problem = callbackUrlProblem(options.callbackUrl, deps.config.callbackAllowedHosts);
    if (problem === undefined) callbackUrl = options.callbackUrl;
    else {
      wholeInput ??= 'callback_url';
      issues.push({ line: null, column: 'callback_url', message: `callback_url ${problem}` });
    }
  }

  const rejectedOutcome = (): EnqueueOutcome => ({
    status: 'rejected',
    batchId: null,
    created: false,
    resumed: false,
    held: false,
    heldReason: null,
    accepted: 0,
    rejected: rejectedRows,
    duplicates: duplicates.length + input.omittedDuplicates,
    errors: firstIssues([...issues, ...duplicates]),
    errorCount: issues.length + input.omittedIssues + duplicates.length + input.omittedDuplicates,
    totalAmount: 0n,
    routes: [],
    wholeInput,
    validRows: rowsWithoutIssues(input.transfers, [...issues, ...duplicates]),
  });
  const strict = !options.skipInvalid;
  if (wholeInput !== null || (strict && (issues.length > 0 || duplicates.length > 0)))
    return rejectedOutcome();
  if (input.transfers.length === 0) {
    wholeInput = 'no_valid_rows';
    issues.push({ line: null, column: null, message: 'no valid rows to enqueue' });
    return rejectedOutcome();
  }

  const digest = batchDigest(input.transfers);
  const batchId = options.batchId ?? derivedBatchId(digest);
  const writer = createBatchWriter({ ...deps, fingerprint: paymentFingerprint });

  const existing = await writer.readBatchState(batchId);
  if (existing && existing.digest !== digest) throw new BatchConflictError(batchId);

  // Read by every run (a resumed one too: the rows it has still to write carry the flag).
  const screen = await screenRecipients(deps.redis, deps.prefix, input.transfers, options.ownAddresses);
  const dropped: DroppedRow[] = [];
  let holds: HoldDecision | undefined;
  if (!existing) {
    // Decisions that depend on what else is in Redis are made once, by the run that creates the batch.
    if (!options.allowDuplicates) {
      const idless = input.transfers.filter((t) => !t.hasPayoutId);
      const fps = idless.map(paymentFingerprint);
      const recent = await findRecentPayments(deps.redis, deps.prefix, fps, {
        batchId,
        now: now(),
        ...(options.sameFamily ? { sameFamily: options.sameFamily } : {}),
      });
      idless.forEach((t, i) => {
        const match = recent.get(fps[i] as string);
        if (!match) return;
        const issue = {
          line: t.line,
          column: null,
          message: `likely duplicate of transfer ${match.transferId} of batch ${match.batchId} (${match.state.replace('_', ' ')}, same from, to, amount and recipient within 24 h), and no id`,
        };
        duplicates.push(issue);
        dropped.push(issue);
      });
    }
    if (deps.config.newRecipientPolicy === 'reject') {
      const refused = refusedByBook(input.transfers, screen);
      if (strict) {
        rejectedRows += refused.length;
        issues.push(...refused);
      } else dropped.push(...refused.filter((r) => !dropped.some((d) => d.line === r.line)));
    }
    if (strict) {
      const owners = await findPayoutOwners(
        deps.redis,
        deps.prefix,
        input.transfers.filter((t) => t.hasPayoutId).map((t) => t.id),
        batchId,
      );
      for (const t of input.transfers) {
        const owner = owners.get(t.id);
        if (t.hasPayoutId && owner !== undefined) {
          rejectedRows++;
          issues.push({
            line: t.line,
            column: 'id',
            message: `payout id "${t.id}" was already enqueued in batch ${owner}`,
          });
        }
      }
      if (issues.length > 0 || duplicates.length > 0) return rejectedOutcome();
    }
    const droppedLines = new Set(dropped.map((d) => d.line));
    const amount = input.transfers.reduce((s, t) => (droppedLines.has(t.line) ? s : s + t.amount), 0n);
    if (deps.config.maxBatchUsdc !== undefined && amount > deps.config.maxBatchUsdc) {
      issues.push({
        line: null,
        column: 'amount',
        message: `batch total ${formatUsdc(amount)} is above MAX_BATCH_USDC (${formatUsdc(deps.config.maxBatchUsdc)})`,
      });
      wholeInput = 'batch_total';
      return rejectedOutcome();
    }
    if (droppedLines.size === input.transfers.length) {
      wholeInput = 'no_valid_rows';
      issues.push({ line: null, column: null, message: 'no valid rows to enqueue' });
      return rejectedOutcome();
    }
    holds = await decideHolds(
      { redis: deps.redis, prefix: deps.prefix, config: deps.config, now: now() },
      input.transfers.filter((t) => !droppedLines.has(t.line)),
      screen,
      { batchId, member: batchId, outside: options.holdReasons },
    );
  }

  const createdAt = now();
  const result = await writer.write(
    {
      batchId,
      digest,
      source: options.source,
      createdAt,
      // An existing batch keeps the hold it was written with (the writer reads it back).
      held: (holds?.reasons.length ?? 0) > 0,
      heldReason: holds?.reasons.join('; '),
      newRecipients: screen.notInBook,
      callbackUrl,
      transfers: input.transfers,
      dropped,
    },
    { ...options.write, onOwnedPayout: strict ? 'strict' : 'skip' },
  );

  const accepted = (state: { dropped: readonly DroppedRow[] }): TransferRequest[] => {
    const lines = new Set(state.dropped.map((d) => d.line));
    return input.transfers.filter((t) => !lines.has(t.line));
  };
  const enqueuedOutcome = (
    state: Pick<BatchState, 'rows' | 'amount' | 'dropped' | 'held' | 'heldReason'>,
    created: boolean,
    resumed: boolean,
  ): EnqueueOutcome => {
    // Rows refused by Redis-side rules: a payout id owned elsewhere, a recipient the book refuses.
    const owned = state.dropped.filter((d) => isRefusal(d));
    const redisDuplicates = state.dropped.filter((d) => !isRefusal(d));
    const allDuplicates = [...input.duplicates, ...redisDuplicates];
    return {
      status: 'enqueued',
      batchId,
      created,
      resumed,
      held: state.held,
      heldReason: state.held ? state.heldReason : null,
      accepted: state.rows,
      rejected: input.invalidRows + owned.length,
      duplicates: allDuplicates.length + input.omittedDuplicates,
      errors: firstIssues([...input.issues, ...owned, ...allDuplicates]),
      errorCount:
        input.issues.length +
        input.omittedIssues +
        owned.length +
        allDuplicates.length +
        input.omittedDuplicates,
      totalAmount: state.amount,
      routes: routeTotals(accepted(state)),
      wholeInput: null,
      validRows: input.transfers.length,
    };
  };

  switch (result.status) {
    case 'conflict':
      await holds?.undo();
      throw new BatchConflictError(batchId);
    case 'exists':
      return enqueuedOutcome(result.state, false, false);
    case 'refused':
      await holds?.undo();
      for (const d of result.dropped) {
        if (isRefusal(d)) {
          rejectedRows++;
          issues.push(d);
        } else if (!duplicates.some((x) => x.line === d.line)) duplicates.push(d);
      }
      return rejectedOutcome();
    case 'written': {
      const state = await writer.readBatchState(batchId);
      const outcome = enqueuedOutcome(
        state ?? {
          rows: result.rows,
          amount: result.amount,
          dropped: result.dropped,
          held: false,
          heldReason: null,
        },
        true,
        !result.created,
      );
      if (result.created) {
        await recordAudit(deps.redis, deps.prefix, {
          actor: options.actor,
          action: 'enqueue',
          batch: batchId,
          detail: {
            source: options.source,
            rows: outcome.accepted,
            amount: formatUsdc(outcome.totalAmount),
            held: outcome.held,
            ...(outcome.heldReason ? { held_reason: outcome.heldReason } : {}),
            new_recipients: accepted(state ?? { dropped: result.dropped }).filter((t) =>
              screen.notInBook.has(t.id),
            ).length,
          },
        });
      }
      return outcome;
    }
  }
}

/** How many of the rows have no problem listed at their line (refused by Redis-side rules or not). */
function rowsWithoutIssues(transfers: readonly TransferRequest[], issues: readonly IngestIssue[]): number {
  const lines = new Set(issues.map((i) => i.line));
  return transfers.filter((t) => !lines.has(t.line)).length;
}

/** A dropped row that was refused (counted as rejected), not a likely duplicate. */
function isRefusal(d: DroppedRow): boolean {
  return d.column === 'id' || d.column === 'recipient';
}
