import { getBase58Decoder, getBase58Encoder } from '@solana/kit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeBase58, encodeBase58 } from '../../src/domain/base58.ts';

describe('base58', () => {
  it('decodes and encodes exactly as @solana/kit does, leading zero bytes included', () => {
    const kitText = getBase58Decoder();
    const kitBytes = getBase58Encoder();
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 80 }), fc.nat({ max: 4 }), (body, zeros) => {
        const bytes = Uint8Array.from([...new Array<number>(zeros).fill(0), ...body]);
        const text = kitText.decode(bytes);
        expect(encodeBase58(bytes)).toBe(text);
        expect(Array.from(decodeBase58(text) ?? [])).toEqual(Array.from(kitBytes.encode(text)));
      }),
      { numRuns: 2_000 },
    );
  });

  it('refuses characters outside the alphabet', () => {
    for (const bad of ['0', 'O', 'I', 'l', 'abc+', ' 1', '2é', '3€'])
      expect(decodeBase58(bad)).toBeUndefined();
  });
});
