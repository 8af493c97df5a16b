import { ValidationError } from './errors.ts';

/** USDC has 6 decimals: amounts are `bigint` micro-USDC inside, decimal strings at the edges. */
export const USDC_DECIMALS = 6;
export const MICRO_PER_USDC = 1_000_000n;

// Digits, an optional fraction of 1-6 digits. No sign, exponent, separators, spaces, leading '.',
// trailing '.', or leading zeros. `.5` and `01` are refused on purpose: both are what a spreadsheet
// or a hand edit leaves behind (a lost leading digit, a zero-padded code pasted into the amount
// column) more often than what someone meant to pay, and a payout should not guess.
const AMOUNT_RE = /^(0|[1-9][0-9]*)(?:\.([0-9]{1,6}))?$/;
const MAX_DIGITS = 30;

type ParseResult = { ok: true; value: bigint } | { ok: false; reason: string };

/**
 * Parses a decimal USDC amount into micro-USDC. Accepts `12`, `12.5`, `12.500000`, `0.000001`.
 * Refuses `.5`, `5.`, `01`, `1e3`, `-1`, `+1`, `0`, `0.0`, `1,000`, ` 1`, `1.0000001`.
 */
export function tryParseUsdc(text: string, { allowZero = false } = {}): ParseResult {
  if (text.length === 0) return { ok: false, reason: 'is empty' };
  if (text.length > MAX_DIGITS) return { ok: false, reason: 'is too long' };
  if (/\s/.test(text)) return { ok: false, reason: 'must not contain spaces' };
  if (/^[+-]/.test(text)) return { ok: false, reason: 'must not have a sign' };
  if (/[eE]/.test(text)) return { ok: false, reason: 'must be a plain decimal, not an exponent' };
  if (/[,_']/.test(text)) return { ok: false, reason: 'must not contain thousands separators' };
  const m = AMOUNT_RE.exec(text);
  if (!m) {
    if (/^[0-9]*\.[0-9]{7,}$/.test(text)) return { ok: false, reason: 'has more than 6 decimals' };
    if (/^\.[0-9]+$/.test(text)) return { ok: false, reason: 'needs a digit before the decimal point (0.5)' };
    if (/^[0-9]+\.$/.test(text)) return { ok: false, reason: 'needs digits after the decimal point' };
    if (/^0[0-9]/.test(text)) return { ok: false, reason: 'must not have leading zeros' };
    return { ok: false, reason: 'is not a decimal amount (e.g. 12.50)' };
  }
  const whole = BigInt(m[1] ?? '0');
  const frac = BigInt((m[2] ?? '').padEnd(USDC_DECIMALS, '0'));
  const value = whole * MICRO_PER_USDC + frac;
  if (value === 0n && !allowZero) return { ok: false, reason: 'must be greater than 0' };
  return { ok: true, value };
}

export function parseUsdc(text: string, what = 'amount'): bigint {
  const r = tryParseUsdc(text);
  if (!r.ok) throw new ValidationError('USDC_AMOUNT_INVALID', `${what} ${r.reason}: "${text.slice(0, 40)}"`);
  return r.value;
}

/**
 * Formats micro-USDC as a decimal string with at least two decimals (`10.00`, `12.50`,
 * `0.123456`), the shape of the service's samples. `tryParseUsdc(formatUsdc(x))` gives back `x`.
 */
export function formatUsdc(micro: bigint): string {
  const negative = micro < 0n;
  const abs = negative ? -micro : micro;
  const whole = abs / MICRO_PER_USDC;
  let frac = (abs % MICRO_PER_USDC).toString().padStart(USDC_DECIMALS, '0').replace(/0+$/, '');
  if (frac.length < 2) frac = frac.padEnd(2, '0');
  return `${negative ? '-' : ''}${whole}.${frac}`;
}

/**
 * Parses a decimal amount that the service sent us (fees may be `0`, and may use any number of
 * decimals up to 6). Returns undefined when it is not a valid non-negative amount.
 */
export function parseServiceAmount(value: unknown): bigint | undefined {
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) {
    // A JSON number is tolerated only when it converts exactly at 6 decimals.
    const text = value.toFixed(6);
    if (Number(text) !== value) return undefined;
    value = text;
  }
  if (typeof value !== 'string') return undefined;
  const m = /^([0-9]+)(?:\.([0-9]+))?$/.exec(value.trim());
  if (!m) return undefined;
  const fracText = m[2] ?? '';
  if (fracText.length > USDC_DECIMALS && /[1-9]/.test(fracText.slice(USDC_DECIMALS))) return undefined;
  return (
    BigInt(m[1] ?? '0') * MICRO_PER_USDC + BigInt(fracText.slice(0, USDC_DECIMALS).padEnd(USDC_DECIMALS, '0'))
  );
}

/** Basis points of `part` relative to `whole`, rounded up (a fee guard must never round in our favour). */
export function bpsOf(part: bigint, whole: bigint): bigint {
  if (whole <= 0n) return part > 0n ? 10_000n : 0n;
  return (part * 10_000n + whole - 1n) / whole;
}
