import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { UsdcBatchError } from '../../src/domain/errors.ts';
import { bpsOf, formatUsdc, parseServiceAmount, parseUsdc, tryParseUsdc } from '../../src/domain/money.ts';

const reasonOf = (text: string): string => {
  const r = tryParseUsdc(text);
  if (r.ok) throw new Error(`"${text}" was accepted as ${r.value}`);
  return r.reason;
};

describe('USDC amounts', () => {
  it('gives back every amount from 1 micro-USDC to a billion USDC after a format and a parse', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 10n ** 15n }), (micro) => {
        expect(parseUsdc(formatUsdc(micro))).toBe(micro);
      }),
      { numRuns: 2_000 },
    );
  });

  it('formats with at least two decimals and no trailing zeros beyond them', () => {
    expect(formatUsdc(10_000_000n)).toBe('10.00');
    expect(formatUsdc(12_500_000n)).toBe('12.50');
    expect(formatUsdc(123_456n)).toBe('0.123456');
    expect(formatUsdc(1n)).toBe('0.000001');
    expect(formatUsdc(1_000_000_000_000_000n)).toBe('1000000000.00');
  });

  it('reads every well-formed decimal with 0 to 6 decimals as the exact integer of micro-USDC', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 1n, max: 10n ** 12n }),
        fc.integer({ min: 0, max: 6 }),
        (whole, decimals) => {
          const fraction = decimals === 0 ? '' : `.${'0'.repeat(decimals)}`;
          expect(parseUsdc(`${whole}${fraction}`)).toBe(whole * 1_000_000n);
        },
      ),
    );
  });

  it('accepts plain decimals: 12, 12.5, 12.500000, 0.000001', () => {
    expect(parseUsdc('12')).toBe(12_000_000n);
    expect(parseUsdc('12.5')).toBe(12_500_000n);
    expect(parseUsdc('12.500000')).toBe(12_500_000n);
    expect(parseUsdc('0.000001')).toBe(1n);
    expect(parseUsdc('0.5')).toBe(500_000n);
  });

  it.each([
    ['1e3', 'must be a plain decimal, not an exponent'],
    ['-1', 'must not have a sign'],
    ['+1', 'must not have a sign'],
    ['0', 'must be greater than 0'],
    ['0.000000', 'must be greater than 0'],
    ['1,000', 'must not contain thousands separators'],
    ['1_000', 'must not contain thousands separators'],
    [' 1', 'must not contain spaces'],
    ['1 ', 'must not contain spaces'],
    ['1.0000001', 'has more than 6 decimals'],
    ['.5', 'needs a digit before the decimal point (0.5)'],
    ['5.', 'needs digits after the decimal point'],
    ['01', 'must not have leading zeros'],
    ['00.5', 'must not have leading zeros'],
    ['', 'is empty'],
    ['12.5 USDC', 'must not contain spaces'],
    ['1O', 'is not a decimal amount (e.g. 12.50)'],
    ['0x10', 'is not a decimal amount (e.g. 12.50)'],
    ['1'.repeat(31), 'is too long'],
  ])('refuses %j: it %s', (text, reason) => {
    expect(reasonOf(text)).toBe(reason);
  });

  it('refuses what a float would round: no amount is ever read through a number', () => {
    // 0.1 + 0.2 in floating point is 0.30000000000000004: as text it has more than 6 decimals.
    expect(reasonOf(String(0.1 + 0.2))).toBe('has more than 6 decimals');
    expect(parseUsdc('9007199254740993')).toBe(9007199254740993n * 1_000_000n);
  });

  it('names the field and the bad text in the error, with a stable code', () => {
    let caught: unknown;
    try {
      parseUsdc('1e3', 'MAX_TRANSFER_USDC');
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(UsdcBatchError);
    expect((caught as UsdcBatchError).code).toBe('USDC_AMOUNT_INVALID');
    expect((caught as UsdcBatchError).message).toBe(
      'MAX_TRANSFER_USDC must be a plain decimal, not an exponent: "1e3"',
    );
  });

  it('accepts zero only when asked (fee caps may be zero, payments may not)', () => {
    expect(tryParseUsdc('0', { allowZero: true })).toEqual({ ok: true, value: 0n });
    expect(tryParseUsdc('0').ok).toBe(false);
  });
});

describe('amounts sent by the service', () => {
  it('reads strings of any precision up to 6 decimals and zero fees', () => {
    expect(parseServiceAmount('0')).toBe(0n);
    expect(parseServiceAmount('0.10')).toBe(100_000n);
    expect(parseServiceAmount('1.2345670')).toBe(1_234_567n);
    expect(parseServiceAmount('10.00')).toBe(10_000_000n);
  });

  it('reads a JSON number only when it is exact at 6 decimals', () => {
    expect(parseServiceAmount(0.25)).toBe(250_000n);
    expect(parseServiceAmount(0.1234567)).toBeUndefined();
  });

  it('refuses negatives, precision below a micro-USDC and non-amounts', () => {
    expect(parseServiceAmount('-1')).toBeUndefined();
    expect(parseServiceAmount('1.0000001')).toBeUndefined();
    expect(parseServiceAmount('abc')).toBeUndefined();
    expect(parseServiceAmount(null)).toBeUndefined();
    expect(parseServiceAmount(-0.5)).toBeUndefined();
  });
});

describe('basis points for the fee guard', () => {
  it('rounds up, so a fee just over the cap is never let through by rounding', () => {
    expect(bpsOf(100_000n, 10_000_000n)).toBe(100n); // exactly 1 %
    expect(bpsOf(100_001n, 10_000_000n)).toBe(101n);
    expect(bpsOf(0n, 10_000_000n)).toBe(0n);
  });

  it('never reports less than the true ratio', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 10n ** 12n }),
        fc.bigInt({ min: 1n, max: 10n ** 12n }),
        (fee, amount) => {
          const bps = bpsOf(fee, amount);
          expect(bps * amount).toBeGreaterThanOrEqual(fee * 10_000n);
          expect((bps - 1n) * amount).toBeLessThan(fee * 10_000n);
        },
      ),
    );
  });
});
