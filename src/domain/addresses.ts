import { createKeccak } from 'hash-wasm';
import { decodeBase58 } from './base58.ts';

export type AddressCheck = { ok: true; value: string } | { ok: false; reason: string };

// hash-wasm's keccak (WebAssembly) rather than one in JavaScript: the checksum is hashed once per
// EVM row of a file, and this one takes ~3 µs for 40 hex characters where js-sha3's took ~7.5 µs
// and @noble/hashes' ~13 µs (measured on one 2-core machine). Its hasher is made once,
// when this module loads, and reused: every use below is synchronous, init to digest.
// test/unit/addresses.test.ts checks the result against viem's `getAddress` for random addresses.
const keccak = await createKeccak(256);

function keccakOf(text: string): Uint8Array {
  keccak.init();
  keccak.update(text);
  return keccak.digest('binary');
}

/** The checksummed address's character codes, `0x` first: reused by every checksum (each is synchronous). */
const CHECKSUMMED: number[] = [48, 120, ...new Array<number>(40).fill(0)];

function toChecksum(lowerHex40: string): string {
  const hash = keccakOf(lowerHex40);
  // EIP-55: a letter is upper case where its nibble of the hash is 8 or more. Built from character
  // codes into one flat string (string concatenation here leaves a rope of 40 pieces per address,
  // which costs over 1 KB each until flattened: 100,000 rows → 100 MB of heap).
  for (let i = 0; i < 40; i++) {
    let code = lowerHex40.charCodeAt(i);
    const nibble = (hash[i >> 1] as number) >> (i % 2 === 0 ? 4 : 0);
    if (code >= 97 /* 'a' */ && (nibble & 0x8) !== 0) code -= 32;
    CHECKSUMMED[i + 2] = code;
  }
  return String.fromCharCode.apply(null, CHECKSUMMED);
}

/** EIP-55 checksummed form of a 20-byte hex address. */
export function checksumEvmAddress(address: string): string {
  return toChecksum(address.slice(2).toLowerCase());
}

/**
 * An EVM address: `0x` and 40 hex digits. Mixed case must be a valid EIP-55 checksum; all-lower or
 * all-upper is accepted as is. The returned value is the checksummed form.
 */
export function checkEvmAddress(text: string): AddressCheck {
  if (!/^0x[0-9a-fA-F]{40}$/.test(text)) {
    // Only text of a Solana address's length is worth decoding, to say what it is.
    if (isSolanaLength(text) && decodeBase58(text)?.length === 32)
      return { ok: false, reason: 'is a Solana address, not an EVM address' };
    return { ok: false, reason: 'is not an EVM address (0x followed by 40 hex digits)' };
  }
  const body = text.slice(2);
  const checksummed = toChecksum(body.toLowerCase());
  const mixed = body !== body.toLowerCase() && body !== body.toUpperCase();
  if (mixed && checksummed !== text) return { ok: false, reason: 'has an invalid EIP-55 checksum' };
  return { ok: true, value: checksummed };
}

/** Base58 of 32 bytes is 32 to 44 characters: the length is checked before any decoding. */
function isSolanaLength(text: string): boolean {
  return text.length >= 32 && text.length <= 44;
}

/** A Solana address: base58 of exactly 32 bytes. */
export function checkSolanaAddress(text: string): AddressCheck {
  if (/^0x[0-9a-fA-F]{40}$/.test(text))
    return { ok: false, reason: 'is an EVM address, not a Solana address' };
  if (!isSolanaLength(text)) return { ok: false, reason: 'is not a Solana address (base58, 32 bytes)' };
  const bytes = decodeBase58(text);
  if (!bytes) return { ok: false, reason: 'is not a Solana address (contains a non-base58 character)' };
  if (bytes.length !== 32) return { ok: false, reason: 'is not a Solana address (must decode to 32 bytes)' };
  return { ok: true, value: text };
}

/**
 * An address (or a tx hash or signature) as a log line names it: `0x4BB8…2aAe`; the full one is in the
 * record and the job's result.
 */
export function shortAddress(a: string): string {
  return a.length > 14 ? `${a.slice(0, 6)}…${a.slice(-4)}` : a;
}
