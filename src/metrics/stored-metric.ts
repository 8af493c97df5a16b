/*
 * Counters and histograms whose observations were made by the worker processes into Redis, read
 * back at scrape time and rendered in Prometheus's format.
 */

export type StoredValue = { labels: Record<string, string | number>; value: number; metricName?: string };

/**
 * A counter or histogram whose observations were made elsewhere (by worker processes, into Redis):
 * prom-client's own Counter and Histogram count only what this process observes, so this renders
 * the stored totals in the same exposition format (`_bucket{le}`, `_sum`, `_count` for a histogram).
 */
export class StoredMetric {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'histogram';
  readonly aggregator = 'sum' as const;
  values: StoredValue[] = [];
  constructor(type: 'counter' | 'histogram', name: string, help: string) {
    this.type = type;
    this.name = name;
    this.help = help;
  }
  async get() {
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values: this.values,
    };
  }
  reset() {
    this.values = [];
  }
  collect() {}
}

/**
 * A histogram kept by workers as Redis hash fields `<label1>|<label2>|count`, `…|sum_ms` and one
 * per bucket `…|b<i>` (not cumulative): rendered as `_bucket{le}` (cumulative), `_sum`, `_count`.
 */
export function histogramValues(
  raw: Record<string, string>,
  name: string,
  bucketsMs: readonly number[],
  labelNames: readonly [string, string],
): StoredValue[] {
  type Series = { count: number; sumMs: number; buckets: number[] };
  const series = new Map<string, Series>();
  for (const [field, value] of Object.entries(raw)) {
    const m = /^([A-Za-z_]+)\|([a-z_]+)\|(count|sum_ms|b([0-9]+))$/.exec(field);
    if (!m) continue;
    const key = `${m[1]}|${m[2]}`;
    const s = series.get(key) ?? {
      count: 0,
      sumMs: 0,
      buckets: new Array<number>(bucketsMs.length + 1).fill(0),
    };
    const n = Number(value) || 0;
    if (m[3] === 'count') s.count = n;
    else if (m[3] === 'sum_ms') s.sumMs = n;
    else if (Number(m[4]) < s.buckets.length) s.buckets[Number(m[4])] = n;
    series.set(key, s);
  }
  const out: StoredValue[] = [];
  for (const [key, s] of [...series].sort(([a], [b]) => a.localeCompare(b))) {
    const [first = '', second = ''] = key.split('|');
    const labels = { [labelNames[0]]: first, [labelNames[1]]: second };
    let cumulative = 0;
    bucketsMs.forEach((le, i) => {
      cumulative += s.buckets[i] ?? 0;
      out.push({ metricName: `${name}_bucket`, labels: { ...labels, le: le / 1000 }, value: cumulative });
    });
    out.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: s.count });
    out.push({ metricName: `${name}_sum`, labels, value: s.sumMs / 1000 });
    out.push({ metricName: `${name}_count`, labels, value: s.count });
  }
  return out;
}

/** Counter fields `<name>|<label1>|<label2>…` of the counters hash, as labelled values. */
export function countersOf(
  raw: Record<string, string>,
  name: string,
  labelNames: readonly string[],
): StoredValue[] {
  const out: StoredValue[] = [];
  for (const [field, value] of Object.entries(raw).sort(([a], [b]) => a.localeCompare(b))) {
    const parts = field.split('|');
    if (parts[0] !== name || parts.length !== labelNames.length + 1) continue;
    const labels: Record<string, string> = {};
    labelNames.forEach((l, i) => (labels[l] = parts[i + 1] ?? ''));
    out.push({ labels, value: Number(value) || 0 });
  }
  return out;
}
