/**
 * When each block of one chain was mined, in milliseconds of this process's clock (anvil's own
 * header timestamps are whole seconds, too coarse for a lag of a few hundred ms). Blocks the
 * sandbox found already there (genesis, the baseline after a reset) count as mined long ago.
 */
export type BlockClock = {
  /** Notes block `n` mined at `at` (and every unseen block before it at the same time). */
  record(n: bigint, at: number): void;
  /** The newest block known. */
  head(): bigint;
  /** When the newest block was mined (0 for blocks found already there). */
  lastMinedAt(): number;
  /** The newest block mined at least `lagMs` before `now`. */
  headAt(lagMs: number, now: number): bigint;
  /** Forgets blocks above `n` (after the chain was reverted to `n`). */
  truncate(n: bigint): void;
};

export function createBlockClock(baseline: bigint): BlockClock {
  let base = baseline;
  // minedAt[i] is block base + 1 + i; times only grow.
  let minedAt: number[] = [];
  const head = () => base + BigInt(minedAt.length);
  return {
    record(n, at) {
      while (head() < n) minedAt.push(Math.max(at, minedAt.at(-1) ?? 0));
    },
    head,
    lastMinedAt: () => minedAt.at(-1) ?? 0,
    headAt(lagMs, now) {
      const horizon = now - lagMs;
      // Binary search: the count of blocks mined at or before the horizon.
      let lo = 0;
      let hi = minedAt.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if ((minedAt[mid] as number) <= horizon) lo = mid + 1;
        else hi = mid;
      }
      return base + BigInt(lo);
    },
    truncate(n) {
      if (n < base) {
        base = n;
        minedAt = [];
      } else minedAt = minedAt.slice(0, Number(n - base));
    },
  };
}
