import { describe, expect, it } from 'vitest';
import { isAsNewAs } from '../../src/pipeline/evm/evm-refused-permit.ts';
import type { NonceReading } from '../../src/signing/types.ts';

const at = (timestamp: bigint): NonceReading => ({
  nonce: 0n,
  block: { number: 1n, timestamp, hash: `0x${'00'.repeat(32)}` },
});

describe('a reading as new as a refusal, with whole-second block timestamps', () => {
  const second = 1_795_000_000n;
  const refusedAt = Number(second) * 1000 + 650;

  it('is not one from a block stamped before the refusal’s second', () => {
    expect(isAsNewAs(at(second - 1n), refusedAt)).toBe(false);
  });

  it('is not one from a block stamped with the refusal’s own second (it may have been made before it)', () => {
    expect(isAsNewAs(at(second), refusedAt)).toBe(false);
  });

  it('is one from a block stamped after the refusal’s second', () => {
    expect(isAsNewAs(at(second + 1n), refusedAt)).toBe(true);
  });

  it('is one from a block stamped with the very instant of a refusal on a whole second', () => {
    expect(isAsNewAs(at(second), Number(second) * 1000)).toBe(true);
    expect(isAsNewAs(at(second - 1n), Number(second) * 1000)).toBe(false);
  });
});
