import { isAddress as isSolanaAddress } from '@solana/kit';
import fc from 'fast-check';
import { getAddress } from 'viem';
import { describe, expect, it } from 'vitest';
import { checkEvmAddress, checkSolanaAddress, checksumEvmAddress } from '../../src/domain/addresses.ts';
import { decodeBase58, encodeBase58 } from '../../src/domain/base58.ts';

const hex = (bytes: Uint8Array) => `0x${Buffer.from(bytes).toString('hex')}`;

describe('EVM addresses', () => {
  // The test vectors of EIP-55 itself.
  const eip55 = [
    '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
    '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359',
    '0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB',
    '0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb',
  ];

  it.each(eip55)('accepts the EIP-55 vector %s as is', (address) => {
    expect(checkEvmAddress(address)).toEqual({ ok: true, value: address });
  });

  it('refuses a mixed-case address whose checksum is wrong by one letter', () => {
    const bad = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD';
    expect(checkEvmAddress(bad)).toEqual({ ok: false, reason: 'has an invalid EIP-55 checksum' });
  });

  it('accepts all-lower and all-upper addresses and returns them checksummed', () => {
    const lower = '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed';
    expect(checkEvmAddress(lower)).toEqual({ ok: true, value: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed' });
    expect(checkEvmAddress('0x52908400098527886E0F7030069857D2E4169EE7')).toEqual({
      ok: true,
      value: '0x52908400098527886E0F7030069857D2E4169EE7',
    });
  });

  it('checksums exactly as viem does, for any 20 bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 20, maxLength: 20 }), (bytes) => {
        const expected = getAddress(hex(bytes));
        expect(checksumEvmAddress(hex(bytes))).toBe(expected);
        expect(checkEvmAddress(expected)).toEqual({ ok: true, value: expected });
      }),
      { numRuns: 300 },
    );
  });

  it.each([
    ['0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeA', 'is not an EVM address (0x followed by 40 hex digits)'],
    ['5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed', 'is not an EVM address (0x followed by 40 hex digits)'],
    ['0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeg', 'is not an EVM address (0x followed by 40 hex digits)'],
    [' 0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed', 'is not an EVM address (0x followed by 40 hex digits)'],
    ['EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', 'is a Solana address, not an EVM address'],
  ])('refuses %j: it %s', (text, reason) => {
    expect(checkEvmAddress(text)).toEqual({ ok: false, reason });
  });
});

describe('Solana addresses', () => {
  it('accepts base58 text of exactly 32 bytes, like the USDC mint and the system program', () => {
    for (const address of [
      'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
      '11111111111111111111111111111111',
      'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA',
    ]) {
      expect(checkSolanaAddress(address)).toEqual({ ok: true, value: address });
    }
  });

  it('agrees with @solana/kit on any 32 bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), (bytes) => {
        const address = encodeBase58(bytes);
        expect(isSolanaAddress(address)).toBe(true);
        expect(checkSolanaAddress(address)).toEqual({ ok: true, value: address });
      }),
      { numRuns: 300 },
    );
  });

  it('decodes what it encodes, leading zero bytes included', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 80 }), (bytes) => {
        expect(decodeBase58(encodeBase58(bytes))).toEqual(bytes);
      }),
    );
  });

  it('refuses base58 of another length than 32 bytes', () => {
    const short = encodeBase58(new Uint8Array(30).fill(255));
    const long = encodeBase58(Uint8Array.of(0, ...new Uint8Array(32).fill(1)));
    for (const text of [short, long]) {
      expect(text.length).toBeGreaterThanOrEqual(32);
      expect(text.length).toBeLessThanOrEqual(44);
      expect(checkSolanaAddress(text)).toEqual({
        ok: false,
        reason: 'is not a Solana address (must decode to 32 bytes)',
      });
    }
    expect(checkSolanaAddress('EPjFWdd5AufqSSqeM2qN1xzybapC8G4w')).toEqual({
      ok: false,
      reason: 'is not a Solana address (must decode to 32 bytes)',
    });
    expect(checkSolanaAddress('abc')).toEqual({
      ok: false,
      reason: 'is not a Solana address (base58, 32 bytes)',
    });
  });

  it('refuses characters outside base58 (0, O, I, l)', () => {
    expect(checkSolanaAddress('EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt10')).toEqual({
      ok: false,
      reason: 'is not a Solana address (contains a non-base58 character)',
    });
  });

  it('says so when given an EVM address', () => {
    expect(checkSolanaAddress('0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed')).toEqual({
      ok: false,
      reason: 'is an EVM address, not a Solana address',
    });
  });
});

describe('hostile lengths (issue 23)', () => {
  it('never decodes text longer than an address: a million base58 characters are refused as they are', () => {
    const long = '2'.repeat(1_000_000);
    expect(checkEvmAddress(long)).toEqual({
      ok: false,
      reason: 'is not an EVM address (0x followed by 40 hex digits)',
    });
    expect(checkSolanaAddress(long)).toEqual({
      ok: false,
      reason: 'is not a Solana address (base58, 32 bytes)',
    });
    expect(decodeBase58(long)).toBeUndefined();
    // An address's length still decodes, and says what it is.
    expect(checkEvmAddress('ELJtSAttfEnsme9nKNVcwZ68TuB4x9wb89ubKecUULWx')).toEqual({
      ok: false,
      reason: 'is a Solana address, not an EVM address',
    });
    expect(decodeBase58('2'.repeat(128))).toBeInstanceOf(Uint8Array);
    expect(decodeBase58('2'.repeat(129))).toBeUndefined();
  });
});
