import { checkEvmAddress, checkSolanaAddress, type AddressCheck } from '../domain/addresses.ts';
import { isEvmChain, isValidRoute, parseChain, type Chain } from '../domain/chains.ts';
import { formatUsdc, tryParseUsdc } from '../domain/money.ts';
import { inputExcerpt, plainTextProblem } from '../domain/text.ts';
import type { TransferRequest } from '../domain/transfer.ts';
import { ID_PATTERN } from '../domain/ids.ts';
import { FIELD_MAX_LENGTH, MEMO_MAX_LENGTH, type Column, type RawRow } from './columns.ts';
import type { IngestIssue } from './ingest-issue.ts';
import { IssueList } from './issue-list.ts';

export type RowValidatorOptions = {
  /** MAX_TRANSFER_USDC: a row above it is invalid. */
  readonly maxTransferUsdc?: bigint | undefined;
  /** The sanctions lists in force (docs/screening.md): a recipient one names is invalid. */
  readonly screen?: Screen | undefined;
};

/** Which list in force names an address, and of which date; undefined when none does. */
export type Screen = (address: string) => { readonly list: string; readonly date: string } | undefined;

/** What one pass over the rows found; `transfers` are the valid rows in input order. */
export type ValidatedRows = {
  readonly transfers: TransferRequest[];
  /** The first problems found (MAX_LISTED_ISSUES), in row order. */
  readonly issues: IngestIssue[];
  /** Problems found past those listed in `issues`: counted, not kept. */
  readonly omittedIssues: number;
  /** Rows with at least one problem. */
  readonly invalidRows: number;
  /** Every data row of the input, valid or not: what `--expect-rows` is compared with. */
  readonly inputRows: number;
  /** Sum of every amount that parses, valid row or not: what `--expect-total` is compared with. */
  readonly inputTotal: bigint;
};

const ADDRESS_CACHE_SIZE = 4096;

// A row without id gets `line-<N>`; an explicit id of that form could collide with it.
const DERIVED_ID = /^line-[0-9]+$/;

/** The id a row without `id` gets (docs/http-api.md: "one derived from its line"). */
export function derivedTransferId(line: number): string {
  return `line-${line}`;
}

/** What the validator has seen so far; changed only by `addRow` and `rejectRow`. */
type RowValidatorState = {
  readonly options: RowValidatorOptions;
  readonly transfers: TransferRequest[];
  readonly issues: IssueList;
  /** The line each explicit id was first seen on. */
  readonly idLines: Map<string, number>;
  invalidRows: number;
  inputRows: number;
  inputTotal: bigint;
  // Payroll files repeat recipients; the EIP-55 check (a keccak per address) is the costliest step
  // of a row, so a recently seen address is not checked again. The cache is bounded (emptied when
  // full): a file of distinct addresses would otherwise keep a second copy of every one of them.
  readonly evmChecks: Map<string, AddressCheck>;
  readonly solanaChecks: Map<string, AddressCheck>;
};

/** One row being checked: its fields, and where its problems go (at its line). */
type RowCheck = {
  readonly line: number;
  readonly fields: RawRow['fields'];
  readonly problem: (column: Column, message: string) => void;
};

/**
 * Validates rows one at a time (so a CSV can stream through it), collecting every problem with its
 * line and column instead of stopping at the first. The same code serves CSV and JSON input.
 */
export function createRowValidator(options: RowValidatorOptions = {}) {
  const state: RowValidatorState = {
    options,
    transfers: [],
    issues: new IssueList(),
    idLines: new Map(),
    invalidRows: 0,
    inputRows: 0,
    inputTotal: 0n,
    evmChecks: new Map(),
    solanaChecks: new Map(),
  };
  return {
    add: (row: RawRow, known?: KnownAddress): void => addRow(state, row, known),
    /** A row that could not even be read into fields (a CSV row with the wrong field count). */
    reject: (issue: IngestIssue): void => rejectRow(state, issue),
    finish: (): ValidatedRows => finishRows(state),
  };
}
export type RowValidator = ReturnType<typeof createRowValidator>;

/** Checks one row's fields: a valid row becomes a transfer, an invalid one adds its problems. */
function addRow(v: RowValidatorState, row: RawRow, known?: KnownAddress): void {
  v.inputRows++;
  const { line, fields } = row;
  const before = v.issues.count;
  // One at a time: a row of hundreds of thousands of issues would overflow the stack as arguments.
  if (row.issues) for (const issue of row.issues) v.issues.push(issue);
  const r: RowCheck = {
    line,
    fields,
    problem: (column, message) => v.issues.push({ line, column, message }),
  };

  const id = rowId(v, r);
  const from = rowChain(r, 'from');
  const to = rowChain(r, 'to');
  if (from !== undefined && to !== undefined && !isValidRoute(from, to)) {
    r.problem('to', `${from} → ${to} is not supported: from SOLANA the destination must be an EVM chain`);
  }
  const amount = rowAmount(v, r);
  const recipient = rowRecipient(v, r, to, known);
  const memo = fieldText(r, 'memo', false);
  if (memo !== undefined) {
    const memoProblem = memoProblemOf(memo);
    if (memoProblem !== undefined) r.problem('memo', memoProblem);
  }

  if (v.issues.count > before) {
    v.invalidRows++;
    return;
  }
  v.transfers.push({
    id: id ?? derivedTransferId(line),
    hasPayoutId: id !== undefined,
    line,
    from: from as Chain,
    to: to as Chain,
    amount: amount as bigint,
    recipient: recipient as string,
    memo: memo ?? null,
  });
}

function rejectRow(v: RowValidatorState, issue: IngestIssue): void {
  v.inputRows++;
  v.invalidRows++;
  v.issues.push(issue);
}

function finishRows(v: RowValidatorState): ValidatedRows {
  return {
    transfers: v.transfers,
    issues: v.issues.listed,
    omittedIssues: v.issues.omitted,
    invalidRows: v.invalidRows,
    inputRows: v.inputRows,
    inputTotal: v.inputTotal,
  };
}

/** A field's text; undefined (and a problem when required) when empty, or not a string. */
function fieldText(r: RowCheck, column: Column, required: boolean): string | undefined {
  const v = r.fields[column];
  if (v === undefined || v === null || v === '') {
    if (required) r.problem(column, `${column} is required`);
    return undefined;
  }
  if (typeof v !== 'string') {
    r.problem(
      column,
      `${column} must be a string${column === 'amount' ? ' (e.g. "12.50"), not a number' : ''}`,
    );
    return undefined;
  }
  if (v.length > FIELD_MAX_LENGTH[column]) {
    r.problem(
      column,
      `${column} is ${v.length} characters long; at most ${FIELD_MAX_LENGTH[column]} are allowed`,
    );
    return undefined;
  }
  return v;
}

/** The row's explicit payout id, unique in the input; undefined when absent or invalid. */
function rowId(v: RowValidatorState, r: RowCheck): string | undefined {
  const id = fieldText(r, 'id', false);
  if (id === undefined) return undefined;
  if (!ID_PATTERN.test(id)) {
    r.problem('id', `id "${inputExcerpt(id, 70)}" must be 1-64 characters of A-Z, a-z, 0-9, "_", "." or "-"`);
    return undefined;
  }
  if (DERIVED_ID.test(id)) {
    r.problem('id', `id "${id}" has the form reserved for rows without id (line-N)`);
    return undefined;
  }
  const first = v.idLines.get(id);
  if (first !== undefined) r.problem('id', `duplicate id "${id}" (first on line ${first})`);
  else v.idLines.set(id, r.line);
  return id;
}

function rowChain(r: RowCheck, column: 'from' | 'to'): Chain | undefined {
  const text = fieldText(r, column, true);
  if (text === undefined) return undefined;
  const c = parseChain(text);
  if (c === undefined) {
    r.problem(
      column,
      `unknown chain "${inputExcerpt(text, 20)}" (expected ETH, BASE, ARB, POLYGON or SOLANA)`,
    );
  }
  return c;
}

/** The amount, within MAX_TRANSFER_USDC; every amount that parses counts in the input's total. */
function rowAmount(v: RowValidatorState, r: RowCheck): bigint | undefined {
  const text = fieldText(r, 'amount', true);
  if (text === undefined) return undefined;
  const parsed = tryParseUsdc(text);
  if (!parsed.ok) {
    r.problem('amount', `amount ${parsed.reason}: "${inputExcerpt(text, 40)}"`);
    return undefined;
  }
  v.inputTotal += parsed.value;
  const max = v.options.maxTransferUsdc;
  if (max !== undefined && parsed.value > max) {
    r.problem('amount', `amount ${formatUsdc(parsed.value)} is above MAX_TRANSFER_USDC (${formatUsdc(max)})`);
    return undefined;
  }
  return parsed.value;
}

/** The recipient, checked as an address of the destination's kind (a check done ahead is reused). */
function rowRecipient(
  v: RowValidatorState,
  r: RowCheck,
  to: Chain | undefined,
  known: KnownAddress | undefined,
): string | undefined {
  const text = fieldText(r, 'recipient', true);
  if (text === undefined || to === undefined) return undefined;
  const evm = isEvmChain(to);
  const check =
    known !== undefined && known.evm === evm && known.text === text ? known.check : cachedCheck(v, evm, text);
  if (check.ok) return screened(v, r, check.value);
  r.problem(
    'recipient',
    `recipient "${inputExcerpt(text, 50)}" ${check.reason} (destination ${to} needs ${
      evm ? 'an EVM' : 'a Solana'
    } address)`,
  );
  return undefined;
}

/** A valid recipient, unless a sanctions list in force names it (an invalid row at its line). */
function screened(v: RowValidatorState, r: RowCheck, address: string): string | undefined {
  const hit = v.options.screen?.(address);
  if (hit === undefined) return address;
  r.problem('recipient', `recipient ${address} is on the sanctions list ${hit.list} of ${hit.date}`);
  return undefined;
}

function cachedCheck(v: RowValidatorState, evm: boolean, text: string): AddressCheck {
  const cache = evm ? v.evmChecks : v.solanaChecks;
  let r = cache.get(text);
  if (!r) {
    r = evm ? checkEvmAddress(text) : checkSolanaAddress(text);
    if (cache.size >= ADDRESS_CACHE_SIZE) cache.clear();
    cache.set(text, r);
  }
  return r;
}

/**
 * Why a memo is invalid, or undefined: at most MEMO_MAX_LENGTH characters of plain text. A control
 * character (C0, DEL or C1, line breaks and tabs included), a bidirectional text control or an
 * invisible character would reach terminals, pages and spreadsheets through `status`, `export`, `/ui`
 * and callbacks (and could make an invoice name read backwards), so the row is refused rather than
 * the memo altered.
 */
export function memoProblemOf(memo: string): string | undefined {
  // Two UTF-16 units at most per character: a longer text is too long whatever it holds.
  if (memo.length > 2 * MEMO_MAX_LENGTH)
    return `memo is longer than ${MEMO_MAX_LENGTH} characters; at most ${MEMO_MAX_LENGTH} are allowed`;
  const length = [...memo].length;
  if (length > MEMO_MAX_LENGTH) return `memo is ${length} characters; at most ${MEMO_MAX_LENGTH} are allowed`;
  return plainTextProblem('memo', memo, 'a memo is plain text on one line');
}

/** An address of a row and its check, done ahead of `add` (possibly on another thread). */
export type KnownAddress = { readonly evm: boolean; readonly text: string; readonly check: AddressCheck };

/**
 * The recipient `add` will check for this row, and as what kind of address; undefined when the row
 * has none to check. Only a hint: `add` uses a known check only when it matches what it would check.
 */
export function addressOf(row: RawRow): { evm: boolean; text: string } | undefined {
  const text = row.fields.recipient;
  const to = row.fields.to;
  if (typeof text !== 'string' || text === '' || typeof to !== 'string') return undefined;
  const chain = parseChain(to);
  return chain === undefined ? undefined : { evm: isEvmChain(chain), text };
}
