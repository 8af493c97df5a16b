import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { feeCapBreach, feeGuardLine } from '../../src/domain/fee-cap.ts';
import { inLanes } from '../../src/domain/pool.ts';

describe('the fee cap', () => {
  it('refuses a fee one micro-USDC over 1 % of the amount, and accepts exactly 1 %', () => {
    const caps = { maxFeeBps: 100n, maxFeeUsdc: undefined };
    expect(feeCapBreach(100_000n, 10_000_000n, caps)).toBeUndefined();
    expect(feeCapBreach(100_001n, 10_000_000n, caps)).toEqual({ cap: 'bps', bps: 101n, maxFeeBps: 100n });
  });

  it("says the guard's decision: within both caps, or over which one, naming the fee when asked", () => {
    expect(feeGuardLine(undefined, undefined)).toBe('fee within MAX_FEE_BPS and MAX_FEE_USDC');
    expect(feeGuardLine('0.02', undefined)).toBe('fee 0.02 USDC within MAX_FEE_BPS and MAX_FEE_USDC');
    expect(feeGuardLine(undefined, { cap: 'bps', bps: 101n, maxFeeBps: 100n })).toBe('fee over MAX_FEE_BPS');
    expect(feeGuardLine('0.6', { cap: 'usdc', maxFeeUsdc: 500_000n })).toBe('fee 0.6 USDC over MAX_FEE_USDC');
  });

  it('refuses a fee over MAX_FEE_USDC even when its basis points are within MAX_FEE_BPS', () => {
    const caps = { maxFeeBps: 100n, maxFeeUsdc: 500_000n };
    expect(feeCapBreach(500_000n, 100_000_000n, caps)).toBeUndefined();
    expect(feeCapBreach(500_001n, 100_000_000n, caps)).toEqual({ cap: 'usdc', maxFeeUsdc: 500_000n });
  });

  it('is over the bps cap exactly when fee × 10,000 > amount × MAX_FEE_BPS (rounding up never changes the verdict)', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 10n ** 12n }),
        fc.bigInt({ min: 1n, max: 10n ** 12n }),
        fc.bigInt({ min: 0n, max: 10_000n }),
        (fee, amount, maxFeeBps) => {
          const over = feeCapBreach(fee, amount, { maxFeeBps, maxFeeUsdc: undefined }) !== undefined;
          expect(over).toBe(fee * 10_000n > amount * maxFeeBps);
        },
      ),
      { numRuns: 2_000 },
    );
  });
});

describe('the concurrency pool', () => {
  it('never runs more than its lanes at once and runs every item', async () => {
    let running = 0;
    let most = 0;
    const seen: number[] = [];
    await inLanes([1, 2, 3, 4, 5, 6, 7], 3, async (n) => {
      running++;
      most = Math.max(most, running);
      await Promise.resolve();
      seen.push(n);
      running--;
    });
    expect(most).toBe(3);
    expect(seen.sort()).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('takes no new item after a failure and throws it once every lane has stopped', async () => {
    const started: number[] = [];
    let running = 0;
    const err = await inLanes([1, 2, 3, 4, 5, 6], 2, async (n) => {
      started.push(n);
      running++;
      await Promise.resolve();
      running--;
      if (n === 2) throw new Error('two');
    }).catch((e: unknown) => e);
    expect((err as Error).message).toBe('two');
    expect(running).toBe(0);
    expect(started).not.toContain(6);
  });
});
