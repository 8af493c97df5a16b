import {
  getCompiledTransactionMessageDecoder,
  getCompiledTransactionMessageEncoder,
  type CompiledTransactionMessage,
} from '@solana/kit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeBase58 } from '../../src/domain/base58.ts';
import { decodeLegacyOrV0Message } from '../../src/signing/solana/compiled-message.ts';

/*
 * The policy reads every transaction it signs through decodeLegacyOrV0Message: it must see exactly
 * what the kit's decoder sees, and refuse exactly what it refuses. Judged against the kit on
 * generated messages, every truncation of them and random corruptions.
 */

const kit = getCompiledTransactionMessageDecoder();
const encoder = getCompiledTransactionMessageEncoder();

/** 32 bytes as an address, with zero to five leading zero bytes (base58 '1's). */
const key = fc
  .tuple(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.nat({ max: 5 }))
  .map(([b, zeros]) => encodeBase58(Uint8Array.from(b.map((x, i) => (i < zeros ? 0 : x)))));

const instruction = fc.record({
  programAddressIndex: fc.nat({ max: 255 }),
  accountIndices: fc.array(fc.nat({ max: 255 }), { maxLength: 20 }),
  data: fc.uint8Array({ maxLength: 200 }),
});

const lookup = fc.record({
  lookupTableAddress: key,
  writableIndexes: fc.array(fc.nat({ max: 255 }), { maxLength: 6 }),
  readonlyIndexes: fc.array(fc.nat({ max: 255 }), { maxLength: 6 }),
});

const message = fc.record({
  version: fc.constantFrom('legacy' as const, 0 as const),
  header: fc.record({
    numSignerAccounts: fc.nat({ max: 255 }),
    numReadonlySignerAccounts: fc.nat({ max: 255 }),
    numReadonlyNonSignerAccounts: fc.nat({ max: 255 }),
  }),
  staticAccounts: fc.array(key, { maxLength: 20 }),
  lifetimeToken: key,
  instructions: fc.array(instruction, { maxLength: 8 }),
  addressTableLookups: fc.array(lookup, { maxLength: 3 }),
});

function encoded(m: unknown): Uint8Array {
  return Uint8Array.from(encoder.encode(m as CompiledTransactionMessage));
}

/** What a decoder made of the bytes: its message, or that it refused them. */
function outcome(decode: (b: Uint8Array) => unknown, bytes: Uint8Array): unknown {
  try {
    return { message: decode(bytes) };
  } catch {
    return 'refused';
  }
}

/**
 * Ours and the kit agree on `bytes`: the same message, or both refuse. A message whose first byte
 * says v1 ours leaves to the kit (undefined), as decodeWireTransaction then asks it.
 */
function expectAgreement(bytes: Uint8Array, what: string): void {
  const ours = outcome(decodeLegacyOrV0Message, bytes);
  if (ours !== 'refused' && (ours as { message: unknown }).message === undefined) {
    expect(bytes[0], what).toBe(0x81);
    return;
  }
  expect(ours, what).toEqual(outcome(kit.decode, bytes));
}

describe('the compiled message as the policy reads it', () => {
  it('is what the kit decodes, for legacy and v0 messages (with and without lookups)', () => {
    fc.assert(
      fc.property(message, (m) => {
        const bytes = encoded(m);
        expectAgreement(bytes, 'whole');
        // A legacy header of 128 signers or more reads as a version byte, to both.
        if (m.version === 0 || m.header.numSignerAccounts < 0x80)
          expect(decodeLegacyOrV0Message(bytes)).toEqual(kit.decode(bytes));
      }),
      { numRuns: 300 },
    );
  });

  it('refuses every truncation the kit refuses, and reads the rest as the kit does', () => {
    fc.assert(
      fc.property(message, (m) => {
        const bytes = encoded(m);
        for (let n = 0; n < bytes.length; n++) {
          expectAgreement(bytes.subarray(0, n), `cut at ${n}`);
        }
      }),
      { numRuns: 30 },
    );
  });

  it('agrees with the kit on corrupted bytes: the same message, or both refuse', () => {
    fc.assert(
      fc.property(
        message,
        fc.array(fc.tuple(fc.nat(), fc.nat({ max: 255 })), { minLength: 1, maxLength: 4 }),
        (m, flips) => {
          const bytes = encoded(m);
          for (const [at, value] of flips) bytes[at % bytes.length] = value;
          expectAgreement(bytes, 'corrupted');
        },
      ),
      { numRuns: 1_000 },
    );
  });

  it('leaves a v1 message to the kit, and refuses a version the kit does not support', () => {
    expect(decodeLegacyOrV0Message(Uint8Array.from([0x81, 1, 0, 0]))).toBeUndefined();
    expect(() => decodeLegacyOrV0Message(Uint8Array.from([0x82, 1, 0, 0]))).toThrow();
    expect(() => kit.decode(Uint8Array.from([0x82, 1, 0, 0]))).toThrow();
  });
});
