import { CsvError, parse } from 'csv-parse/sync';
import { labelProblem, parseBookAddress, type BookAddress } from '../domain/recipient-key.ts';
import type { IngestIssue } from './ingest-issue.ts';

/** A row of an address book import, validated. */
export type RecipientRow = { readonly line: number; readonly address: BookAddress; readonly label: string };

export type RecipientInput = {
  readonly rows: RecipientRow[];
  /** Every problem, at its line and column: any one refuses the whole file. */
  readonly issues: IngestIssue[];
};

const COLUMNS = ['address', 'label'] as const;

/**
 * `recipients import FILE.csv` (docs/operating.md "The commands"): a CSV with a header naming `address` (required) and
 * `label` (optional), case-insensitive, in any order; a BOM, CRLF and blank lines are tolerated, as
 * for payout files. Each address is checked as `recipients add` checks it (EIP-55 when mixed case;
 * base58 of 32 bytes for Solana). An address book file is small (10,000 lines is under a megabyte),
 * so it is parsed whole.
 */
export function readRecipientCsv(text: string): RecipientInput {
  let records: { record: string[]; info: { lines: number } }[];
  try {
    records = parse(text, {
      bom: true,
      info: true,
      relax_column_count: true,
      skip_empty_lines: true,
    }) as unknown as {
      record: string[];
      info: { lines: number };
    }[];
  } catch (err) {
    if (err instanceof CsvError)
      return {
        rows: [],
        issues: [{ line: null, column: null, message: `the file is not valid CSV (${err.code})` }],
      };
    throw err;
  }
  const data = records.filter((r) => r.record.some((v) => v.trim() !== ''));
  const head = data[0];
  if (!head)
    return {
      rows: [],
      issues: [
        { line: 1, column: null, message: 'the file is empty: a header row (address,label) is required' },
      ],
    };
  const names = head.record.map((v) => v.trim().toLowerCase());
  const issues: IngestIssue[] = [];
  names.forEach((name, i) => {
    if (!(COLUMNS as readonly string[]).includes(name)) {
      issues.push({
        line: head.info.lines,
        column: name.slice(0, 40),
        message: `unknown column "${(head.record[i] ?? '').slice(0, 40)}" (allowed: address, label)`,
      });
    } else if (names.indexOf(name) !== i) {
      issues.push({ line: head.info.lines, column: name, message: `column "${name}" appears twice` });
    }
  });
  const addressAt = names.indexOf('address');
  const labelAt = names.indexOf('label');
  if (addressAt === -1)
    issues.push({ line: head.info.lines, column: 'address', message: 'missing required column "address"' });
  if (issues.length > 0) return { rows: [], issues };

  const rows: RecipientRow[] = [];
  for (const { record, info } of data.slice(1)) {
    // csv-parse's `info.lines` is the line a record ends on; a record of this file is one line.
    const line = info.lines;
    if (record.length !== names.length) {
      issues.push({
        line,
        column: null,
        message: `row has ${record.length} fields; the header has ${names.length}`,
      });
      continue;
    }
    const text = (record[addressAt] ?? '').trim();
    const label = labelAt === -1 ? '' : (record[labelAt] ?? '').trim();
    const parsed = text === '' ? undefined : parseBookAddress(text);
    if (!parsed) issues.push({ line, column: 'address', message: 'address is required' });
    else if (!parsed.ok)
      issues.push({ line, column: 'address', message: `"${text.slice(0, 60)}" ${parsed.reason}` });
    const bad = labelProblem(label);
    if (bad) issues.push({ line, column: 'label', message: bad });
    if (parsed?.ok && !bad) rows.push({ line, address: parsed.value, label });
  }
  if (rows.length === 0 && issues.length === 0)
    issues.push({ line: null, column: null, message: 'the file has no addresses' });
  return { rows, issues };
}
