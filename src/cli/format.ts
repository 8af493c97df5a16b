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
