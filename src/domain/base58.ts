const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
/** Each ASCII character's base58 digit, by char code; -1 for one that is not base58. */
const DIGIT = new Int8Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) DIGIT[ALPHABET.charCodeAt(i)] = i;

/**
 * The longest text decoded: a 64-byte Solana secret key is at most 88 characters, an address 44.
 * Decoding takes time in the square of the length, so longer text is refused before it starts.
 */
export const MAX_BASE58_LENGTH = 128;

const LIMB = 0x1000000; // 2^24
/** Digits taken in at once: 58^4 < 2^24, so a limb times it plus a carry stays below 2^53 (exact). */
const DIGITS_AT_ONCE = 4;

/**
 * Decodes base58 (Bitcoin alphabet, as Solana uses); undefined when a character is not base58 or
 * the text is longer than MAX_BASE58_LENGTH. Not BigInt: a large CSV decodes one address per row.
 * The number is built in 24-bit limbs, least significant first, four digits at a time (about a
 * tenth of the multiplications of a byte at a time, one digit at a time); test/unit/base58.test.ts
 * checks it against @solana/kit's decoder for random bytes with leading zeros.
 */
export function decodeBase58(text: string): Uint8Array | undefined {
  if (text.length > MAX_BASE58_LENGTH) return undefined;
  let zeros = 0;
  while (zeros < text.length && text.charCodeAt(zeros) === 49 /* '1' */) zeros++;
  // log(58) / log(2^24) ≈ 0.244 limbs a digit, and one more for the rounding.
  const limbs = new Uint32Array(Math.ceil((text.length - zeros) * 0.245) + 1);
  let length = 0;
  for (let i = zeros; i < text.length; i += DIGITS_AT_ONCE) {
    const end = Math.min(i + DIGITS_AT_ONCE, text.length);
    let scale = 1;
    let carry = 0;
    for (let j = i; j < end; j++) {
      const code = text.charCodeAt(j);
      const digit = code < 128 ? (DIGIT[code] as number) : -1;
      if (digit < 0) return undefined;
      carry = carry * 58 + digit;
      scale *= 58;
    }
    for (let k = 0; k < length; k++) {
      const x = (limbs[k] as number) * scale + carry;
      carry = Math.floor(x / LIMB);
      limbs[k] = x - carry * LIMB;
    }
    while (carry > 0) {
      limbs[length++] = carry % LIMB;
      carry = Math.floor(carry / LIMB);
    }
  }
  return bytesOf(limbs, length, zeros);
}

/** The number's bytes, big-endian without leading zero bytes, after `zeros` zero bytes. */
function bytesOf(limbs: Uint32Array, length: number, zeros: number): Uint8Array {
  const top = length > 0 ? (limbs[length - 1] as number) : 0;
  const topBytes = top >= 0x10000 ? 3 : top >= 0x100 ? 2 : top > 0 ? 1 : 0;
  const size = length > 0 ? (length - 1) * 3 + topBytes : 0;
  const out = new Uint8Array(zeros + size);
  let at = out.length;
  for (let k = 0; k < length; k++) {
    const limb = limbs[k] as number;
    const n = k === length - 1 ? topBytes : 3;
    for (let b = 0; b < n; b++) out[--at] = (limb >>> (8 * b)) & 0xff;
  }
  return out;
}

/** 58^5: five base58 digits a limb, and a limb times 256 plus a carry stays below 2^53 (exact). */
const LIMB58 = 656_356_768;
const DIGITS_PER_LIMB58 = 5;

/**
 * Encodes bytes as base58 (Bitcoin alphabet), each leading zero byte as a '1'. Not BigInt: the number
 * is built in limbs of five base58 digits, least significant first, a byte at a time (a Solana
 * transaction's account keys are encoded on every policy check; test/unit/base58.test.ts checks it
 * against @solana/kit's encoder for random bytes with leading zeros).
 */
export function encodeBase58(bytes: Uint8Array): string {
  let zeros = 0;
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++;
  // log(256) / log(58^5) ≈ 0.27 limbs a byte, and one more for the rounding.
  const limbs = new Float64Array(Math.ceil((bytes.length - zeros) * 0.28) + 1);
  let length = 0;
  for (let i = zeros; i < bytes.length; i++) {
    let carry = bytes[i] as number;
    for (let k = 0; k < length; k++) {
      const x = (limbs[k] as number) * 256 + carry;
      carry = Math.floor(x / LIMB58);
      limbs[k] = x - carry * LIMB58;
    }
    while (carry > 0) {
      limbs[length++] = carry % LIMB58;
      carry = Math.floor(carry / LIMB58);
    }
  }
  let out = '';
  for (let k = 0; k < length; k++) {
    let limb = limbs[k] as number;
    const top = k === length - 1;
    for (let d = 0; d < DIGITS_PER_LIMB58 && (!top || limb > 0); d++) {
      out = ALPHABET[limb % 58] + out;
      limb = Math.floor(limb / 58);
    }
  }
  return '1'.repeat(zeros) + out;
}
