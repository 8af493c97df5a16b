import { Readable } from 'node:stream';
import { CsvError, parse } from 'csv-parse';
import { inputExcerpt } from '../domain/text.ts';
import { createEventLoopTurn } from './event-loop-turn.ts';
import { COLUMNS, REQUIRED_COLUMNS, isColumn, type Column, type RawRow } from './columns.ts';
import type { IngestIssue, WholeInputRefusal } from './ingest-issue.ts';

export type CsvReadResult = {
  /**
   * A problem of the file as a whole (no header, an unknown or missing column, broken CSV syntax):
   * the file is rejected even with `--skip-invalid`.
   */
  readonly fatal: boolean;
  /** What made it fatal (the first such problem), or null. */
  readonly refusal: Extract<WholeInputRefusal, 'header' | 'syntax' | 'empty'> | null;
};

// A record larger than this is not a payout row; refusing it bounds memory on hostile input.
const MAX_RECORD_SIZE = 64 * 1024;
// The size of the pieces a buffer in memory is parsed in (`bufferSource`).
const CHUNK_BYTES = 64 * 1024;

/**
 * A body already in memory (an HTTP request) as a stream of 64 KiB pieces: the CSV parser turns one
 * input chunk into records in one synchronous pass and holds them all until they are read, so a
 * 10 MB body fed whole would block the process and hold every parsed row at once.
 */
export function bufferSource(buffer: Buffer): Readable {
  return Readable.from(
    (function* pieces() {
      for (let at = 0; at < buffer.length; at += CHUNK_BYTES) yield buffer.subarray(at, at + CHUNK_BYTES);
    })(),
  );
}

/**
 * Streams a CSV (RFC 4180, UTF-8, BOM tolerated, CRLF or LF) and hands each data row to the sink
 * with the line it starts on (header = line 1; a quoted field may span lines). Header problems are
 * file issues, a row with the wrong number of fields is a bad row; a CSV syntax error (an unclosed quote)
 * ends the read, since nothing after it can be trusted.
 */
export type CsvSink = {
  /** A data row, to validate. */
  row(row: RawRow): void;
  /** A data row that cannot be read (wrong number of fields): invalid as a whole. */
  badRow(issue: IngestIssue): void;
  /** A problem of the whole file. */
  fileIssue(issue: IngestIssue): void;
};

export async function readCsvRows(input: Readable, sink: CsvSink): Promise<CsvReadResult> {
  const parser = input.pipe(
    parse({
      bom: true,
      info: true,
      relax_column_count: true,
      skip_empty_lines: true,
      max_record_size: MAX_RECORD_SIZE,
    }),
  );
  input.on('error', (err) => parser.destroy(err));

  let header: (Column | undefined)[] | undefined;
  let fatal = false;
  let refusal: CsvReadResult['refusal'] = null;
  // A record starts one past the previous record's end plus the blank lines skipped in between, and
  // ends after the line breaks inside its quoted fields. (csv-parse's own `info.lines` counts a CRLF
  // inside quotes as two lines, so the breaks are counted here.)
  let prevEndLine = 0;
  let prevEmptyLines = 0;
  let sawRecord = false;
  const turn = createEventLoopTurn();

  try {
    for await (const item of parser as AsyncIterable<{
      record: string[];
      info: { empty_lines: number };
    }>) {
      if (turn.due()) await turn.pause();
      const { record, info } = item;
      const line = prevEndLine + 1 + (info.empty_lines - prevEmptyLines);
      prevEndLine = line + lineBreaksIn(record);
      prevEmptyLines = info.empty_lines;
      // A line of only spaces or only commas is a blank line that a spreadsheet left behind.
      if (record.every((v) => v.trim() === '')) continue;

      if (!sawRecord) {
        sawRecord = true;
        const h = readHeader(record, line, (issue) => {
          fatal = true;
          refusal = 'header';
          sink.fileIssue(issue);
        });
        // Without the required columns every row would only repeat "is required".
        if (!h.usable) break;
        header = h.columns;
        continue;
      }
      if (!header) break;
      if (record.length !== header.length) {
        sink.badRow({
          line,
          column: null,
          message: `row has ${record.length} fields; the header has ${header.length}`,
        });
        continue;
      }
      const fields: Partial<Record<Column, string>> = {};
      for (let i = 0; i < header.length; i++) {
        const column = header[i];
        if (column !== undefined) fields[column] = record[i] as string;
      }
      sink.row({ line, fields });
    }
  } catch (err) {
    if (err instanceof CsvError) {
      const lines = (err as CsvError & { lines?: number }).lines;
      sink.fileIssue({
        line: typeof lines === 'number' ? lines : null,
        column: null,
        message: csvErrorMessage(err),
      });
      return { fatal: true, refusal: refusal ?? 'syntax' };
    }
    throw err;
  }
  if (!sawRecord) {
    sink.fileIssue({ line: 1, column: null, message: 'the file is empty: a header row is required' });
    return { fatal: true, refusal: 'empty' };
  }
  return { fatal, refusal };
}

function lineBreaksIn(record: readonly string[]): number {
  let n = 0;
  for (const field of record) {
    if (field.includes('\n') || field.includes('\r')) n += field.match(/\r\n|\r|\n/g)?.length ?? 0;
  }
  return n;
}

function readHeader(
  record: string[],
  line: number,
  onIssue: (issue: IngestIssue) => void,
): { columns: (Column | undefined)[]; usable: boolean } {
  const names = record.map((v) => v.trim().toLowerCase());
  if (!names.some(isColumn)) {
    onIssue({
      line,
      column: null,
      message: `missing header row: the first line must name the columns (${COLUMNS.join(', ')})`,
    });
    return { columns: [], usable: false };
  }
  const seen = new Set<string>();
  const header: (Column | undefined)[] = [];
  names.forEach((name, i) => {
    const original = (record[i] as string).trim();
    if (!isColumn(name)) {
      onIssue({
        line,
        column: inputExcerpt(original, 40),
        message: `unknown column "${inputExcerpt(original, 40)}" (allowed: ${COLUMNS.join(', ')})`,
      });
    } else if (seen.has(name)) {
      onIssue({ line, column: name, message: `column "${name}" appears twice` });
    }
    seen.add(name);
    header.push(isColumn(name) ? name : undefined);
  });
  let usable = true;
  for (const required of REQUIRED_COLUMNS) {
    if (!seen.has(required)) {
      usable = false;
      onIssue({ line, column: required, message: `missing required column "${required}"` });
    }
  }
  return { columns: header, usable };
}

function csvErrorMessage(err: CsvError): string {
  switch (err.code) {
    case 'CSV_QUOTE_NOT_CLOSED':
      return 'a quoted field is never closed (unbalanced ")';
    case 'CSV_INVALID_CLOSING_QUOTE':
    case 'CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE':
      return 'unexpected character after a closing quote (a " inside a field must be doubled: "")';
    case 'CSV_MAX_RECORD_SIZE':
      return `a row is longer than ${MAX_RECORD_SIZE} bytes`;
    default:
      return `the file is not valid CSV (${err.code})`;
  }
}
