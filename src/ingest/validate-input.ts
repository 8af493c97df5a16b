import type { Readable } from 'node:stream';
import { formatUsdc } from '../domain/money.ts';
import type { TransferRequest } from '../domain/transfer.ts';
import { readCsvRows } from './csv-source.ts';
import { findInFileDuplicates } from './in-file-duplicates.ts';
import { createEventLoopTurn } from './event-loop-turn.ts';
import type { IngestIssue, WholeInputRefusal } from './ingest-issue.ts';
import { IssueList } from './issue-list.ts';
import type { JsonBatchInput } from './json-source.ts';
import type { AddressCheck } from '../domain/addresses.ts';
import { createAddressChecker, type AddressToCheck } from './address-checker.ts';
import type { RawRow } from './columns.ts';
import { addressOf, createRowValidator, type RowValidator, type Screen } from './row-validator.ts';

export type ControlTotals = { readonly rows?: number | undefined; readonly total?: bigint | undefined };

export type ValidateOptions = {
  readonly maxTransferUsdc?: bigint | undefined;
  /** The sanctions lists in force: a listed recipient is an invalid row (docs/screening.md). */
  readonly screen?: Screen | undefined;
  readonly expect?: ControlTotals | undefined;
  readonly allowDuplicates?: boolean | undefined;
  /** Called every `progressEvery` rows while a CSV streams in. */
  readonly onProgress?: ((rows: number) => void) | undefined;
  readonly progressEvery?: number | undefined;
  /** Check addresses on a worker thread while the file is parsed (for large files: it costs a thread). */
  readonly parallel?: boolean | undefined;
};

/** The input after every check that needs no Redis. */
export type ValidatedInput = {
  /** Valid rows, in order, without the in-file likely duplicates (unless they are allowed). */
  readonly transfers: TransferRequest[];
  /**
   * Problems of invalid rows and of the input as a whole: of each kind, the first found
   * (MAX_LISTED_ISSUES), so the first of all in file order are among them.
   */
  readonly issues: IngestIssue[];
  /** Problems found but not in `issues` (past the first of their kind): counted, not kept. */
  readonly omittedIssues: number;
  readonly invalidRows: number;
  /** In-file likely duplicates (not in `transfers`): the first MAX_LISTED_ISSUES of them. */
  readonly duplicates: IngestIssue[];
  /** In-file likely duplicates not in `duplicates`. */
  readonly omittedDuplicates: number;
  /** The input as a whole is unusable (header, syntax, control totals): rejected even with --skip-invalid. */
  readonly fatal: boolean;
  /** Why the input is unusable as a whole (its first such problem); null when it is not. */
  readonly refusal: WholeInputRefusal | null;
  readonly inputRows: number;
  readonly inputTotal: bigint;
};

export async function validateCsv(input: Readable, options: ValidateOptions = {}): Promise<ValidatedInput> {
  const validator = createRowValidator({ maxTransferUsdc: options.maxTransferUsdc, screen: options.screen });
  const fileIssues = new IssueList();
  const every = options.progressEvery ?? 10_000;
  let rows = 0;
  const tick = () => {
    rows++;
    if (options.onProgress && rows % every === 0) options.onProgress(rows);
  };
  const pipeline = options.parallel ? createParallelRows(validator, tick) : undefined;
  try {
    const { refusal } = await readCsvRows(input, {
      row: (row) => {
        if (pipeline) pipeline.row(row);
        else {
          validator.add(row);
          tick();
        }
      },
      badRow: (issue) => {
        if (pipeline) pipeline.badRow(issue);
        else {
          validator.reject(issue);
          tick();
        }
      },
      fileIssue: (issue) => fileIssues.push(issue),
    });
    await pipeline?.finish();
    return finish(validator, fileIssues, refusal, options);
  } finally {
    await pipeline?.close();
  }
}

type PendingBatch = {
  readonly items: ({ row: RawRow; address: AddressToCheck | undefined } | { issue: IngestIssue })[];
  checks?: AddressCheck[];
  failed?: boolean;
  done?: Promise<void>;
};

// Rows per message to the worker, and batches waiting for it before the main thread checks the
// oldest one itself (so neither thread waits for the other, and few rows are held meanwhile).
const PARALLEL_BATCH = 1000;
const MAX_WAITING_BATCHES = 4;

/**
 * Validation of a large file on two threads: a worker checks the rows' recipient addresses (the
 * EIP-55 keccak and base58 decoding, most of a row's cost) while this thread parses the file and
 * validates the other fields. Rows still go through the validator one at a time and in file order,
 * with the worker's check handed in; when the worker is behind, or fails, the validator checks the
 * address itself, so the result is the same as on one thread.
 */
function createParallelRows(validator: RowValidator, tick: () => void) {
  const checker = createAddressChecker();
  const waiting: PendingBatch[] = [];
  let current: PendingBatch = { items: [] };

  const apply = (batch: PendingBatch) => {
    let k = 0;
    for (const item of batch.items) {
      tick();
      if ('issue' in item) {
        validator.reject(item.issue);
        continue;
      }
      const check = item.address && batch.checks ? batch.checks[k++] : undefined;
      validator.add(item.row, item.address && check ? { ...item.address, check } : undefined);
    }
  };
  const drain = () => {
    for (;;) {
      const head = waiting[0];
      if (!head || !(head.checks || head.failed || waiting.length > MAX_WAITING_BATCHES)) return;
      waiting.shift();
      apply(head);
    }
  };
  const send = () => {
    const batch = current;
    current = { items: [] };
    const addresses: AddressToCheck[] = [];
    for (const item of batch.items) if ('row' in item && item.address) addresses.push(item.address);
    batch.done = checker.check(addresses).then(
      (checks) => {
        batch.checks = checks;
      },
      () => {
        batch.failed = true;
      },
    );
    waiting.push(batch);
    drain();
  };
  const push = (item: PendingBatch['items'][number]) => {
    current.items.push(item);
    if (current.items.length >= PARALLEL_BATCH) send();
  };

  return {
    row: (row: RawRow) => push({ row, address: addressOf(row) }),
    badRow: (issue: IngestIssue) => push({ issue }),
    async finish() {
      for (const batch of waiting) {
        if (!batch.checks && !batch.failed) await batch.done;
        apply(batch);
      }
      waiting.length = 0;
      apply(current);
      current = { items: [] };
    },
    close: () => checker.close(),
  };
}

/** Validates a JSON batch a row at a time, letting the process serve other requests meanwhile. */
export async function validateJson(
  input: JsonBatchInput,
  options: ValidateOptions = {},
): Promise<ValidatedInput> {
  const validator = createRowValidator({ maxTransferUsdc: options.maxTransferUsdc, screen: options.screen });
  const turn = createEventLoopTurn();
  for (const row of input.rows) {
    validator.add(row);
    if (turn.due()) await turn.pause();
  }
  const fileIssues = new IssueList();
  fileIssues.push(...input.issues);
  return finish(validator, fileIssues, fileIssues.count + input.omittedIssues > 0 ? 'document' : null, {
    ...options,
    omittedFileIssues: input.omittedIssues,
    expect: { ...input.expect, ...definedOnly(options.expect ?? {}) },
  });
}

function definedOnly(totals: ControlTotals): ControlTotals {
  return Object.fromEntries(Object.entries(totals).filter(([, v]) => v !== undefined));
}

function finish(
  validator: RowValidator,
  fileIssues: IssueList,
  refusedSoFar: WholeInputRefusal | null,
  options: ValidateOptions & { omittedFileIssues?: number },
): ValidatedInput {
  const v = validator.finish();
  let refusal = refusedSoFar;
  const issues = [...fileIssues.listed, ...v.issues];
  const omittedIssues = fileIssues.omitted + (options.omittedFileIssues ?? 0) + v.omittedIssues;
  const expect = options.expect ?? {};
  // Both control totals are checked: a file wrong in both says so for each.
  const judged = refusal === null;
  if (judged && expect.rows !== undefined && expect.rows !== v.inputRows) {
    refusal = 'control_total';
    issues.push({
      line: null,
      column: null,
      message: `control total: expected ${expect.rows} rows, the input has ${v.inputRows}`,
    });
  }
  if (judged && expect.total !== undefined && expect.total !== v.inputTotal) {
    refusal = 'control_total';
    issues.push({
      line: null,
      column: 'amount',
      message: `control total: expected a total of ${formatUsdc(expect.total)}, the amounts add up to ${formatUsdc(v.inputTotal)}`,
    });
  }
  if (refusal === null && v.inputRows === 0) {
    refusal = 'no_rows';
    issues.push({ line: null, column: null, message: 'the input has no rows' });
  }
  const fatal = refusal !== null;
  if (options.allowDuplicates) {
    return { ...v, issues, omittedIssues, fatal, refusal, duplicates: [], omittedDuplicates: 0 };
  }
  const { kept, duplicates, count } = findInFileDuplicates(v.transfers);
  const omittedDuplicates = count - duplicates.length;
  return { ...v, transfers: kept, issues, omittedIssues, fatal, refusal, duplicates, omittedDuplicates };
}
