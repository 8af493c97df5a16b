import type { Redis } from 'ioredis';
import type { TransferJobSink } from '../domain/transfer-jobs.ts';
import type { Config } from '../config/config.ts';
import { controlDigestOf, type ControlConfig } from '../config/control-settings.ts';
import { callbackUrlProblem } from '../domain/callback-url.ts';
import { ConflictError } from '../domain/errors.ts';
import { formatUsdc } from '../domain/money.ts';
import type { TransferRoad } from '../domain/roads.ts';
import type { BatchSource, TransferRequest } from '../domain/transfer.ts';
import { BATCH_ID_PATTERN, BATCH_ID_RULE } from '../domain/ids.ts';
import {
  readBatchState,
  type BatchState,
  type DroppedRow,
  type WriteOptions,
  type WriteResult,
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
  type RecipientScreen,
} from './hold-rules.ts';
import type { IngestIssue, WholeInputRefusal } from './ingest-issue.ts';
import { writeBatchWithJobs } from './job-hand-off.ts';
import { firstIssues } from './issue-list.ts';
import { onRoad } from './road-rows.ts';
import { routeTotals, type RouteTotal } from './route-totals.ts';
import type { ValidatedInput } from './validate-input.ts';

export type EnqueueDeps = {
  readonly redis: Redis;
  readonly prefix: string;
  readonly jobs: TransferJobSink;
  /** `transferVia` (TRANSFER_VIA): the road of a batch that names none; `service` when absent. */
  readonly config: Pick<Config, 'callbackAllowedHosts' | 'auditLogFile'> &
    Partial<Pick<Config, 'transferVia'>> &
    ControlConfig &
    HoldConfig;
  readonly now?: () => number;
};

export type EnqueueOptions = {
  readonly source: BatchSource;
  /** Who asked (audit log, `submitted_by`): `cli:<name>`, an HTTP credential's name, `schedule:<name>`. */
  readonly actor: string;
  readonly batchId?: string | undefined;
  /** The road every transfer of the batch takes (`--via`, the body's `via`); default TRANSFER_VIA. */
  readonly via?: TransferRoad | undefined;
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
  /** The road the batch takes (asked for, or TRANSFER_VIA's). */
  readonly via: TransferRoad;
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
  /** `road`: the same rows, already enqueued on another road (`existing`). */
  constructor(batchId: string, road?: { readonly existing: TransferRoad; readonly asked: TransferRoad }) {
    super(
      'USDC_BATCH_CONFLICT',
      road === undefined
        ? `batch ${batchId} already exists with different content; use another --batch-id`
        : `batch ${batchId} already exists on the ${road.existing} road, not ${road.asked}; the same rows are paid once, on one road`,
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
  validated: ValidatedInput,
  options: EnqueueOptions,
): Promise<EnqueueOutcome> {
  const via = options.via ?? deps.config.transferVia ?? 'service';
  // The rows the road cannot carry (a SOLANA row on CCTP) are invalid rows, named by their line.
  const input = onRoad(validated, via);
  const strict = !options.skipInvalid;
  const checked = checkOptions(deps.config, options);
  let problems: Problems = {
    issues: [...input.issues, ...checked.issues],
    duplicates: input.duplicates,
    rejectedRows: input.invalidRows,
    wholeInput: input.refusal ?? checked.refusal,
  };
  if (problems.wholeInput !== null || (strict && hasProblems(problems)))
    return rejectedOutcome(input, problems, via);
  if (input.transfers.length === 0) {
    return rejectedOutcome(
      input,
      { ...withIssues(problems, [NO_VALID_ROWS]), wholeInput: 'no_valid_rows' },
      via,
    );
  }

  // The digest is the rows' alone (batch-identity.ts): the same rows on another road are the same
  // batch id, and a conflict rather than a second batch paying them again.
  const digest = batchDigest(input.transfers);
  const batchId = options.batchId ?? derivedBatchId(digest);
  const existing = await readBatchState(deps.redis, deps.prefix, batchId);
  if (existing && existing.digest !== digest) throw new BatchConflictError(batchId);
  if (existing && existing.via !== via)
    throw new BatchConflictError(batchId, { existing: existing.via, asked: via });

  // Read by every run (a resumed one too: the rows it has still to write carry the flag).
  const screen = await screenRecipients(deps.redis, deps.prefix, input.transfers, {
    own: options.ownAddresses,
    submitter: options.actor,
  });
  let decision: NewBatchDecision = { dropped: [], holds: undefined };
  if (!existing) {
    // Decisions that depend on what else is in Redis are made once, by the run that creates the batch.
    const decided = await decideNewBatch(deps, input, options, { batchId, screen, problems });
    if ('rejected' in decided) return rejectedOutcome(input, decided.rejected, via);
    decision = decided;
    problems = decided.problems;
  }

  const batch: BatchFacts = { batchId, digest, via, screen, callbackUrl: checked.callbackUrl };
  const result = await writeBatchOf(deps, input, options, batch, decision);
  switch (result.status) {
    case 'conflict':
      await decision.holds?.undo();
      throw new BatchConflictError(
        batchId,
        result.existingVia !== undefined ? { existing: result.existingVia, asked: via } : undefined,
      );
    case 'exists':
      return enqueuedOutcome(input, batchId, result.state, { created: false, resumed: false });
    case 'refused':
      await decision.holds?.undo();
      return rejectedOutcome(input, withRefusedRows(problems, result.dropped), via);
    case 'written':
      return await writtenOutcome(deps, input, options, batch, result);
  }
}

/** The problems found so far: they reject the input (strict), or are reported with it. */
type Problems = {
  readonly issues: readonly IngestIssue[];
  readonly duplicates: readonly IngestIssue[];
  readonly rejectedRows: number;
  /** Why the input is rejected as a whole, once it is. */
  readonly wholeInput: WholeInputRefusal | null;
};

/** What a new batch's Redis-side rules decided: the rows left out, and its holds. */
type NewBatchDecision = {
  readonly dropped: readonly DroppedRow[];
  readonly holds: HoldDecision | undefined;
};

/** What the run knows of the batch it writes. */
type BatchFacts = {
  readonly batchId: string;
  readonly digest: string;
  readonly via: TransferRoad;
  readonly screen: RecipientScreen;
  readonly callbackUrl: string | null;
};

const NO_VALID_ROWS: IngestIssue = { line: null, column: null, message: 'no valid rows to enqueue' };

function hasProblems(p: Problems): boolean {
  return p.issues.length > 0 || p.duplicates.length > 0;
}

function withIssues(p: Problems, issues: readonly IngestIssue[], rejectedRows = 0): Problems {
  return { ...p, issues: [...p.issues, ...issues], rejectedRows: p.rejectedRows + rejectedRows };
}

/** The options' own problems (a batch id or callback URL out of its rule: fatal), and the URL kept. */
function checkOptions(
  config: EnqueueDeps['config'],
  options: EnqueueOptions,
): {
  readonly issues: IngestIssue[];
  readonly callbackUrl: string | null;
  readonly refusal: WholeInputRefusal | null;
} {
  const issues: IngestIssue[] = [];
  let refusal: WholeInputRefusal | null = null;
  if (options.batchId !== undefined && !BATCH_ID_PATTERN.test(options.batchId)) {
    refusal ??= 'batch_id';
    issues.push({ line: null, column: 'batch_id', message: `batch id must be ${BATCH_ID_RULE}` });
  }
  let callbackUrl: string | null = null;
  if (options.callbackUrl !== undefined) {
    const problem = callbackUrlProblem(options.callbackUrl, config.callbackAllowedHosts);
    if (problem === undefined) callbackUrl = options.callbackUrl;
    else {
      refusal ??= 'callback_url';
      issues.push({ line: null, column: 'callback_url', message: `callback_url ${problem}` });
    }
  }
  return { issues, callbackUrl, refusal };
}

/**
 * The rules of a batch this run creates, which read what else is in Redis: likely duplicates of
 * recent transfers, the address book under `reject`, payout ids other batches own (strict), the
 * batch cap; then its holds. Returns the rows left out and the holds, or the problems that reject it.
 */
async function decideNewBatch(
  deps: EnqueueDeps,
  input: ValidatedInput,
  options: EnqueueOptions,
  facts: { readonly batchId: string; readonly screen: RecipientScreen; readonly problems: Problems },
): Promise<(NewBatchDecision & { readonly problems: Problems }) | { readonly rejected: Problems }> {
  const now = deps.now ?? Date.now;
  const strict = !options.skipInvalid;
  let problems = facts.problems;
  const dropped: DroppedRow[] = [];
  if (!options.allowDuplicates) {
    const likely = await likelyDuplicates(deps, input.transfers, facts.batchId, options.sameFamily);
    problems = { ...problems, duplicates: [...problems.duplicates, ...likely] };
    dropped.push(...likely);
  }
  if (deps.config.newRecipientPolicy === 'reject') {
    const refused = refusedByBook(input.transfers, facts.screen);
    if (strict) problems = withIssues(problems, refused, refused.length);
    else dropped.push(...refused.filter((r) => !dropped.some((d) => d.line === r.line)));
  }
  if (strict) {
    const owned = await ownedPayoutIds(deps, input.transfers, facts.batchId);
    problems = withIssues(problems, owned, owned.length);
    if (hasProblems(problems)) return { rejected: problems };
  }
  const droppedLines = new Set(dropped.map((d) => d.line));
  const kept = input.transfers.filter((t) => !droppedLines.has(t.line));
  const overCap = batchCapIssue(deps.config.maxBatchUsdc, kept);
  if (overCap) return { rejected: { ...withIssues(problems, [overCap]), wholeInput: 'batch_total' } };
  if (kept.length === 0)
    return { rejected: { ...withIssues(problems, [NO_VALID_ROWS]), wholeInput: 'no_valid_rows' } };
  const holds = await decideHolds(
    { redis: deps.redis, prefix: deps.prefix, config: deps.config, now: now() },
    kept,
    facts.screen,
    { batchId: facts.batchId, member: facts.batchId, outside: options.holdReasons },
  );
  return { dropped, holds, problems };
}

/** Rows without a payout id that pay what a recent transfer of another batch paid (24 h). */
async function likelyDuplicates(
  deps: EnqueueDeps,
  transfers: readonly TransferRequest[],
  batchId: string,
  sameFamily: EnqueueOptions['sameFamily'],
): Promise<DroppedRow[]> {
  const idless = transfers.filter((t) => !t.hasPayoutId);
  const fps = idless.map(paymentFingerprint);
  const recent = await findRecentPayments(deps.redis, deps.prefix, fps, {
    batchId,
    now: (deps.now ?? Date.now)(),
    ...(sameFamily ? { sameFamily } : {}),
  });
  return idless.flatMap((t, i) => {
    const match = recent.get(fps[i] as string);
    if (!match) return [];
    return [
      {
        line: t.line,
        column: null,
        message: `likely duplicate of transfer ${match.transferId} of batch ${match.batchId} (${match.state.replace('_', ' ')}, same from, to, amount and recipient within 24 h), and no id`,
      },
    ];
  });
}

/** Rows whose payout id another batch already enqueued. */
async function ownedPayoutIds(
  deps: EnqueueDeps,
  transfers: readonly TransferRequest[],
  batchId: string,
): Promise<IngestIssue[]> {
  const owners = await findPayoutOwners(
    deps.redis,
    deps.prefix,
    transfers.filter((t) => t.hasPayoutId).map((t) => t.id),
    batchId,
  );
  return transfers.flatMap((t) => {
    const owner = owners.get(t.id);
    if (!t.hasPayoutId || owner === undefined) return [];
    return [
      { line: t.line, column: 'id', message: `payout id "${t.id}" was already enqueued in batch ${owner}` },
    ];
  });
}

/** `MAX_BATCH_USDC`: the batch's total over the cap, as an issue. */
function batchCapIssue(cap: bigint | undefined, kept: readonly TransferRequest[]): IngestIssue | undefined {
  const amount = kept.reduce((s, t) => s + t.amount, 0n);
  if (cap === undefined || amount <= cap) return undefined;
  return {
    line: null,
    column: 'amount',
    message: `batch total ${formatUsdc(amount)} is above MAX_BATCH_USDC (${formatUsdc(cap)})`,
  };
}

/** Hands the batch to the writer, its rows becoming jobs as they are written (unless held). */
async function writeBatchOf(
  deps: EnqueueDeps,
  input: ValidatedInput,
  options: EnqueueOptions,
  batch: BatchFacts,
  decision: NewBatchDecision,
): Promise<WriteResult> {
  const { holds } = decision;
  return await writeBatchWithJobs(
    { ...deps, fingerprint: paymentFingerprint },
    {
      batchId: batch.batchId,
      digest: batch.digest,
      via: batch.via,
      source: options.source,
      submittedBy: options.actor,
      approvalsRequired: deps.config.approvalsRequired,
      controls: controlDigestOf(deps.config),
      createdAt: (deps.now ?? Date.now)(),
      // An existing batch keeps the hold it was written with (the writer reads it back).
      held: (holds?.reasons.length ?? 0) > 0,
      heldReason: holds?.reasons.join('; '),
      newRecipients: batch.screen.notInBook,
      callbackUrl: batch.callbackUrl,
      transfers: input.transfers,
      dropped: decision.dropped,
    },
    { ...options.write, onOwnedPayout: options.skipInvalid ? 'skip' : 'strict' },
  );
}

/** A strict refusal by the writer: its refused rows are rejected, its likely duplicates reported. */
function withRefusedRows(p: Problems, dropped: readonly DroppedRow[]): Problems {
  const refused = dropped.filter(isRefusal);
  const duplicates = [...p.duplicates];
  for (const d of dropped) {
    if (!isRefusal(d) && !duplicates.some((x) => x.line === d.line)) duplicates.push(d);
  }
  return { ...withIssues(p, refused, refused.length), duplicates };
}

/** The batch was written (created, or an interrupted run completed): its outcome, audited once. */
async function writtenOutcome(
  deps: EnqueueDeps,
  input: ValidatedInput,
  options: EnqueueOptions,
  batch: BatchFacts,
  result: Extract<WriteResult, { status: 'written' }>,
): Promise<EnqueueOutcome> {
  const { batchId } = batch;
  const state = result.state ?? {
    rows: result.rows,
    amount: result.amount,
    dropped: result.dropped,
    held: false,
    heldReason: null,
    via: batch.via,
  };
  const outcome = enqueuedOutcome(input, batchId, state, { created: true, resumed: !result.created });
  if (result.created) {
    await recordAudit(
      { redis: deps.redis, prefix: deps.prefix, auditLogFile: deps.config.auditLogFile },
      {
        who: options.actor,
        action: 'enqueue',
        batch: batchId,
        detail: {
          source: options.source,
          via: batch.via,
          rows: outcome.accepted,
          amount: formatUsdc(outcome.totalAmount),
          held: outcome.held,
          ...(outcome.heldReason ? { held_reason: outcome.heldReason } : {}),
          new_recipients: acceptedRows(input, state.dropped).filter((t) => batch.screen.notInBook.has(t.id))
            .length,
        },
      },
    );
  }
  return outcome;
}

function rejectedOutcome(input: ValidatedInput, p: Problems, via: TransferRoad): EnqueueOutcome {
  return {
    status: 'rejected',
    batchId: null,
    via,
    created: false,
    resumed: false,
    held: false,
    heldReason: null,
    accepted: 0,
    rejected: p.rejectedRows,
    duplicates: p.duplicates.length + input.omittedDuplicates,
    errors: firstIssues([...p.issues, ...p.duplicates]),
    errorCount: p.issues.length + input.omittedIssues + p.duplicates.length + input.omittedDuplicates,
    totalAmount: 0n,
    routes: [],
    wholeInput: p.wholeInput,
    validRows: rowsWithoutIssues(input.transfers, [...p.issues, ...p.duplicates]),
  };
}

/** How many of the rows have no problem listed at their line (refused by Redis-side rules or not). */
function rowsWithoutIssues(transfers: readonly TransferRequest[], issues: readonly IngestIssue[]): number {
  const lines = new Set(issues.map((i) => i.line));
  return transfers.filter((t) => !lines.has(t.line)).length;
}

function enqueuedOutcome(
  input: ValidatedInput,
  batchId: string,
  state: Pick<BatchState, 'rows' | 'amount' | 'dropped' | 'held' | 'heldReason' | 'via'>,
  run: { readonly created: boolean; readonly resumed: boolean },
): EnqueueOutcome {
  // Rows refused by Redis-side rules: a payout id owned elsewhere, a recipient the book refuses.
  const owned = state.dropped.filter((d) => isRefusal(d));
  const redisDuplicates = state.dropped.filter((d) => !isRefusal(d));
  const allDuplicates = [...input.duplicates, ...redisDuplicates];
  return {
    status: 'enqueued',
    batchId,
    via: state.via,
    created: run.created,
    resumed: run.resumed,
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
    routes: routeTotals(acceptedRows(input, state.dropped)),
    wholeInput: null,
    validRows: input.transfers.length,
  };
}

/** The rows of the input the batch kept. */
function acceptedRows(input: ValidatedInput, dropped: readonly DroppedRow[]): TransferRequest[] {
  const lines = new Set(dropped.map((d) => d.line));
  return input.transfers.filter((t) => !lines.has(t.line));
}

/** A dropped row that was refused (counted as rejected), not a likely duplicate. */
function isRefusal(d: DroppedRow): boolean {
  return d.column === 'id' || d.column === 'recipient';
}
