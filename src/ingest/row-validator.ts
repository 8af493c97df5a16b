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
};

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

/** The id a row without `id` gets (PRODUCT.md §5: "one derived from its line"). */
export function derivedTransferId(line: number): string {
  return `line-${line}`;
}

/**
 * Validates rows one at a time (so a CSV can stream through it), collecting every problem with its
 * line and column instead of stopping at the first. The same code serves CSV and JSON input.
 */
export function createRowValidator(options: RowValidatorOptions = {}) {
  const transfers: TransferRequest[] = [];
  const issues = new IssueList();
  const idLines = new Map<string, number>();
  let invalidRows = 0;
  let inputRows = 0;
  let inputTotal = 0n;
  // Payroll files repeat recipients; the EIP-55 check (a keccak per address) is the costliest step
  // of a row, so a recently seen address is not checked again. The cache is bounded (emptied when
  // full): a file of distinct addresses would otherwise keep a second copy of every one of them.
  const evmChecks = new Map<string, AddressCheck>();
  const solanaChecks = new Map<string, AddressCheck>();
  const checkAddress = (evm: boolean, text: string): AddressCheck => {
    const cache = evm ? evmChecks : solanaChecks;
    let r = cache.get(text);
    if (!r) {
      r = evm ? checkEvmAddress(text) : checkSolanaAddress(text);
      if (cache.size >= ADDRESS_CACHE_SIZE) cache.clear();
      cache.set(text, r);
    }
    return r;
  };

  function add(row: RawRow, known?: KnownAddress): void {
    inputRows++;
    const { line, fields } = row;
    const before = issues.count;
    if (row.issues) issues.push(...row.issues);
    const problem = (column: Column, message: string) => issues.push({ line, column, message });

    const text = (column: Column, required: boolean): string | undefined => {
      const v = fields[column];
      if (v === undefined || v === null || v === '') {
        if (required) problem(column, `${column} is required`);
        return undefined;
      }
      if (typeof v !== 'string') {
        problem(
          column,
          `${column} must be a string${column === 'amount' ? ' (e.g. "12.50"), not a number' : ''}`,
        );
        return undefined;
      }
      if (v.length > FIELD_MAX_LENGTH[column]) {
        problem(
          column,
          `${column} is ${v.length} characters long; at most ${FIELD_MAX_LENGTH[column]} are allowed`,
        );
        return undefined;
      }
      return v;
    };

    let id: string | undefined = text('id', false);
    if (id !== undefined) {
      if (!ID_PATTERN.test(id)) {
        problem(
          'id',
          `id "${inputExcerpt(id, 70)}" must be 1-64 characters of A-Z, a-z, 0-9, "_", "." or "-"`,
        );
        id = undefined;
      } else if (DERIVED_ID.test(id)) {
        problem('id', `id "${id}" has the form reserved for rows without id (line-N)`);
        id = undefined;
      } else {
        const first = idLines.get(id);
        if (first !== undefined) problem('id', `duplicate id "${id}" (first on line ${first})`);
        else idLines.set(id, line);
      }
    }

    const chain = (column: 'from' | 'to'): Chain | undefined => {
      const v = text(column, true);
      if (v === undefined) return undefined;
      const c = parseChain(v);
      if (c === undefined) {
        problem(
          column,
          `unknown chain "${inputExcerpt(v, 20)}" (expected ETH, BASE, ARB, POLYGON or SOLANA)`,
        );
      }
      return c;
    };
    const from = chain('from');
    const to = chain('to');
    if (from !== undefined && to !== undefined && !isValidRoute(from, to)) {
      problem('to', `${from} → ${to} is not supported: from SOLANA the destination must be an EVM chain`);
    }

    let amount: bigint | undefined;
    const amountText = text('amount', true);
    if (amountText !== undefined) {
      const r = tryParseUsdc(amountText);
      if (!r.ok) problem('amount', `amount ${r.reason}: "${inputExcerpt(amountText, 40)}"`);
      else {
        inputTotal += r.value;
        if (options.maxTransferUsdc !== undefined && r.value > options.maxTransferUsdc) {
          problem(
            'amount',
            `amount ${formatUsdc(r.value)} is above MAX_TRANSFER_USDC (${formatUsdc(options.maxTransferUsdc)})`,
          );
        } else amount = r.value;
      }
    }

    let recipient: string | undefined;
    const recipientText = text('recipient', true);
    if (recipientText !== undefined && to !== undefined) {
      const evm = isEvmChain(to);
      const r =
        known !== undefined && known.evm === evm && known.text === recipientText
          ? known.check
          : checkAddress(evm, recipientText);
      if (r.ok) recipient = r.value;
      else {
        problem(
          'recipient',
          `recipient "${inputExcerpt(recipientText, 50)}" ${r.reason} (destination ${to} needs ${
            evm ? 'an EVM' : 'a Solana'
          } address)`,
        );
      }
    }

    const memo = text('memo', false);
    if (memo !== undefined) {
      const memoProblem = memoProblemOf(memo);
      if (memoProblem !== undefined) problem('memo', memoProblem);
    }

    if (issues.count > before) {
      invalidRows++;
      return;
    }
    transfers.push({
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

  /** A row that could not even be read into fields (a CSV row with the wrong field count). */
  function reject(issue: IngestIssue): void {
    inputRows++;
    invalidRows++;
    issues.push(issue);
  }

  function finish(): ValidatedRows {
    return {
      transfers,
      issues: issues.listed,
      omittedIssues: issues.omitted,
      invalidRows,
      inputRows,
      inputTotal,
    };
  }

  return { add, reject, finish };
}
export type RowValidator = ReturnType<typeof createRowValidator>;

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
