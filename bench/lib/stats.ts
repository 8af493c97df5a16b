/** The median of the runs (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** A number for a table: `digits` decimals, thousands separated. */
/** The arithmetic mean; NaN for no values. */
export function mean(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : values.reduce((a, b) => a + b, 0) / values.length;
}

export function fmt(value: number, digits = 0): string {
  if (!Number.isFinite(value)) return 'n/a';
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** `12.3 / 14.1 / 13.0` — every run, so the spread is visible next to the median. */
export function runsOf(values: readonly number[], digits = 0): string {
  return values.map((v) => fmt(v, digits)).join(' / ');
}

export function bytes(value: number): string {
  if (!Number.isFinite(value)) return 'n/a';
  if (Math.abs(value) >= 1024 * 1024 * 1024) return `${fmt(value / 1024 / 1024 / 1024, 2)} GiB`;
  if (Math.abs(value) >= 1024 * 1024) return `${fmt(value / 1024 / 1024, 1)} MiB`;
  if (Math.abs(value) >= 1024) return `${fmt(value / 1024, 2)} KiB`;
  return `${fmt(value)} B`;
}
