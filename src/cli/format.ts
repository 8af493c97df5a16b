import { formatIssue, type IngestIssue } from '../ingest/ingest-issue.ts';

/** Small helpers for human output: aligned tables and a progress bar. */
export function table(headers: string[], rows: (string | number | null)[][]): string {
  const cells = [headers, ...rows.map((r) => r.map((c) => (c === null ? '-' : String(c))))];
  const widths = headers.map((_, i) => Math.min(60, Math.max(...cells.map((r) => (r[i] ?? '').length))));
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
  for (const issue of listed) lines.push(`  ${formatIssue(issue)}`);
  if (count > listed.length)
    lines.push(`  … and ${count - listed.length} more (the first ${listed.length} are listed)`);
  return `${lines.join('\n')}\n`;
}
