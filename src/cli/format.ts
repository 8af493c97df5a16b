import { escapeControlCharacters, escapeJsonControls } from '../domain/text.ts';
import { formatIssue, type IngestIssue } from '../ingest/ingest-issue.ts';

/*
 * Small helpers for output: aligned tables, a progress bar, issue lists and JSON. Whatever they
 * print that may hold outside text (memos, messages quoting input, the service's error messages)
 * has its control characters escaped, so printing it cannot drive the terminal.
 */

/** The widest a table's column is drawn on a terminal; longer values are cut there with `…`. */
const TERMINAL_COLUMN_WIDTH = 60;

/**
 * Whether values may be cut to fit a screen: only when stdout is a terminal. A pipe or a file gets
 * every value whole (docs/operating.md "What the commands print").
 */
export function cutsForScreen(): boolean {
  return process.stdout.isTTY === true;
}

/**
 * An aligned table; cells show control characters escaped. On a terminal (`cut`, by default when
 * stdout is one) a column is at most TERMINAL_COLUMN_WIDTH wide and a longer value ends in `…`;
 * otherwise every value is printed whole.
 */
export function table(
  headers: string[],
  rows: (string | number | null)[][],
  options: { cut?: boolean } = {},
): string {
  const cut = options.cut ?? cutsForScreen();
  const cells = [
    headers,
    ...rows.map((r) => r.map((c) => (c === null ? '-' : escapeControlCharacters(String(c))))),
  ];
  const widest = (i: number) => Math.max(...cells.map((r) => (r[i] ?? '').length));
  const widths = headers.map((_, i) => (cut ? Math.min(TERMINAL_COLUMN_WIDTH, widest(i)) : widest(i)));
  return cells
    .map((r) =>
      r
        .map((c, i) => {
          const w = widths[i] ?? 0;
          const text = c.length > w ? `${c.slice(0, w - 1)}…` : c;
          return text.padEnd(w);
        })
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export function progressBar(done: number, total: number, width = 30): string {
  const ratio = total > 0 ? Math.min(1, done / total) : 1;
  const filled = Math.round(ratio * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} ${(ratio * 100).toFixed(0)}%`;
}

/**
 * The problems of a rejected input for people: `count` of them, `listed` being the first (in file
 * order); empty when there are none.
 */
export function issueReport(listed: readonly IngestIssue[], count: number): string {
  if (count === 0) return '';
  const lines = [`\n${count} problem${count === 1 ? '' : 's'}:`];
  for (const issue of listed) lines.push(`  ${escapeControlCharacters(formatIssue(issue))}`);
  if (count > listed.length)
    lines.push(`  … and ${count - listed.length} more (the first ${listed.length} are listed)`);
  return `${lines.join('\n')}\n`;
}

/** A message for people (one or more lines) with any other control character escaped. */
export function plainText(message: string): string {
  return escapeControlCharacters(message, { keepNewlines: true });
}

/**
 * A JSON document for stdout: indented (or one line with `compact`), with DEL, C1, bidirectional
 * and zero-width characters escaped as `\uXXXX` too (JSON.stringify escapes only C0): the same
 * value, safe on a terminal.
 */
export function jsonText(doc: unknown, options: { compact?: boolean } = {}): string {
  return escapeJsonControls(JSON.stringify(doc, null, options.compact ? undefined : 2));
}
