import { checkEvmAddress, checkSolanaAddress } from './addresses.ts';
import type { Chain } from './chains.ts';
import { plainTextProblem } from './text.ts';

/**
 * The address book's identity of a recipient: its chain family and its address, EVM addresses
 * case-insensitively (one account, however it is cased), Solana addresses exactly (base58 is
 * case-sensitive).
 */
export type AddressFamily = 'evm' | 'solana';

export type BookAddress = {
  readonly family: AddressFamily;
  /** As shown: EIP-55 for EVM, as given for Solana. */
  readonly address: string;
  /** `evm:<lower-case hex>` or `solana:<base58>`: the field of the book's hashes. */
  readonly key: string;
};

export function familyOfChain(to: Chain): AddressFamily {
  return to === 'SOLANA' ? 'solana' : 'evm';
}

export function recipientKey(family: AddressFamily, address: string): string {
  return family === 'evm' ? `evm:${address.toLowerCase()}` : `solana:${address}`;
}

/** The book identity of a transfer's (already validated) recipient. */
export function bookAddressOf(t: { readonly to: Chain; readonly recipient: string }): BookAddress {
  const family = familyOfChain(t.to);
  return { family, address: t.recipient, key: recipientKey(family, t.recipient) };
}

// An address with some spaces around it, as pasted: anything longer is not an address.
const MAX_TYPED_ADDRESS_LENGTH = 64;

/**
 * An address typed by a person (`recipients add`, an import file, `POST /v1/recipients`): its
 * family is told by its form — `0x` and 40 hex digits is EVM (EIP-55 enforced when mixed case),
 * base58 of 32 bytes is Solana.
 */
export function parseBookAddress(
  text: string,
): { ok: true; value: BookAddress } | { ok: false; reason: string } {
  // Bounded before any parsing: no address is longer than 44 characters (base58 of 32 bytes).
  if (text.length > MAX_TYPED_ADDRESS_LENGTH)
    return { ok: false, reason: `is ${text.length} characters long: not an address (at most 44)` };
  const trimmed = text.trim();
  if (/^0x/i.test(trimmed)) {
    const r = checkEvmAddress(trimmed);
    if (!r.ok) return r;
    return { ok: true, value: { family: 'evm', address: r.value, key: recipientKey('evm', r.value) } };
  }
  const r = checkSolanaAddress(trimmed);
  if (!r.ok)
    return { ok: false, reason: 'is neither an EVM address (0x and 40 hex digits) nor a Solana address' };
  return { ok: true, value: { family: 'solana', address: r.value, key: recipientKey('solana', r.value) } };
}

// A label is for people reading the book; it is not free text of any length.
export const LABEL_MAX_LENGTH = 100;

/** A problem with a label, or undefined when it is fine (empty is fine: no label). */
export function labelProblem(label: string): string | undefined {
  if (label.length > LABEL_MAX_LENGTH) return `label is longer than ${LABEL_MAX_LENGTH} characters`;
  return plainTextProblem('label', label, 'a label is plain text on one line');
}
