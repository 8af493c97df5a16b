/**
 * Loads the sanctions lists named on the command line as the worker does and prints one JSON line:
 * how long the load took, and the heap, typed arrays and RSS it added (after a GC, `node --expose-gc`).
 */
import { loadScreeningLists } from '../../src/config/screening/screening-lists.ts';

const gc = (globalThis as { gc?: () => void }).gc;
gc?.();
const before = process.memoryUsage();
const t0 = performance.now();
const lists = await loadScreeningLists(process.argv.slice(2), 365 * 86_400_000);
const ms = performance.now() - t0;
gc?.();
const after = process.memoryUsage();
const addresses = lists.lists().reduce((n, l) => n + l.counts.evm + l.counts.solana + l.counts.other, 0);
// A million lookups of addresses not listed: the cost screening adds per row.
const probe = Array.from({ length: 1_000_000 }, (_, i) => `0x${i.toString(16).padStart(40, '0')}`);
const t1 = performance.now();
let hits = 0;
for (const a of probe) if (lists.lookup(a)) hits++;
const lookupNs = ((performance.now() - t1) * 1e6) / probe.length;
process.stdout.write(
  `${JSON.stringify({ ms, addresses, heapBytes: after.heapUsed - before.heapUsed, arrayBufferBytes: after.arrayBuffers - before.arrayBuffers, rssBytes: after.rss - before.rss, lookupNs, hits })}\n`,
);
