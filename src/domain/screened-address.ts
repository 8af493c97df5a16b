import { decodeBase58 } from './base58.ts';

/*
 * How a sanctions list's addresses and a recipient are compared (docs/screening.md): an EVM-shaped
 * address (0x and 40 hex digits, whatever the asset it is listed under) by its lower-cased text,
 * so that a checksummed recipient and a list written in another case meet; a Solana-shaped one
 * (base58 of 32 bytes) exactly, base58 being case-sensitive. Anything else a list carries (Bitcoin,
 * Tron, Monero… addresses) can never be a recipient here: it is counted, not kept.
 */

/** What kind of address a listed text is. */
export type ScreenedKind = 'evm' | 'solana' | 'other';

const EVM_SHAPE = /^0x[0-9a-fA-F]{40}$/;
const BASE58_SHAPE = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;

/** The kind of a listed address (its text trimmed). */
export function screenedKind(text: string): ScreenedKind {
  if (EVM_SHAPE.test(text)) return 'evm';
  if (BASE58_SHAPE.test(text) && decodeBase58(text)?.length === 32) return 'solana';
  return 'other';
}

/**
 * The key a listed address and a recipient are compared by: lower-cased when EVM-shaped, the text
 * itself otherwise. A recipient has been checked as an address of its kind before it is screened.
 */
export function screeningKey(address: string): string {
  return EVM_SHAPE.test(address) ? address.toLowerCase() : address;
}

/** A list's date of issue as `YYYY-MM-DD` (UTC) from a time in ms. */
export function isoDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** `YYYY-MM-DD` as the time in ms of that day's start (UTC); undefined when not a real date. */
export function dayOf(year: number, month: number, day: number): number | undefined {
  if (!Number.isInteger(year) || !Number.isInteger(month) || !Number.isInteger(day)) return undefined;
  const ms = Date.UTC(year, month - 1, day);
  const d = new Date(ms);
  if (d.getUTCFullYear() !== year || d.getUTCMonth() !== month - 1 || d.getUTCDate() !== day)
    return undefined;
  return ms;
}
