import { describe, expect, it } from 'vitest';
import { createBlockClock } from '../../src/sandbox/evm/block-clock.ts';

describe('the block clock behind the lagging RPC', () => {
  it('answers the newest block mined at least the lag ago; the baseline counts as mined long ago', () => {
    const clock = createBlockClock(1n);
    clock.record(2n, 1_000);
    clock.record(4n, 1_500); // blocks 3 and 4 seen at once
    expect(clock.head()).toBe(4n);
    expect(clock.headAt(0, 1_500)).toBe(4n);
    expect(clock.headAt(400, 1_500)).toBe(2n);
    expect(clock.headAt(600, 1_500)).toBe(1n);
    expect(clock.headAt(100_000, 1_500)).toBe(1n);
  });

  it('forgets the blocks a revert removed', () => {
    const clock = createBlockClock(1n);
    clock.record(5n, 1_000);
    clock.truncate(1n);
    expect(clock.head()).toBe(1n);
    clock.record(2n, 2_000);
    expect(clock.headAt(0, 2_000)).toBe(2n);
    expect(clock.headAt(10, 2_000)).toBe(1n);
  });
});
