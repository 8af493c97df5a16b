const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const INDEX = new Map([...ALPHABET].map((c, i) => [c, i]));

/**
 * The longest text decoded: a 64-byte Solana secret key is at most 88 characters, an address 44.
 * Decoding takes time in the square of the length, so longer text is refused before it starts.
 */
export const MAX_BASE58_LENGTH = 128;

/**
 * Decodes base58 (Bitcoin alphabet, as Solana uses); undefined when a character is not base58 or
 * the text is longer than MAX_BASE58_LENGTH. Byte-array arithmetic, not BigInt: a large CSV decodes
 * one address per row.
 */
export function decodeBase58(text: string): Uint8Array | undefined {
  if (text.length > MAX_BASE58_LENGTH) return undefined;
  let zeros = 0;
  while (zeros < text.length && text[zeros] === '1') zeros++;
  // log(58) / log(256) ≈ 0.733: enough bytes for the number, little-endian while we build it.
  const bytes = new Uint8Array(Math.ceil((text.length - zeros) * 0.733) + 1);
  let length = 0;
  for (let i = zeros; i < text.length; i++) {
    const digit = INDEX.get(text[i] as string);
    if (digit === undefined) return undefined;
    let carry = digit;
    for (let j = 0; j < length; j++) {
      carry += (bytes[j] as number) * 58;
      bytes[j] = carry & 0xff;
      carry >>= 8;
    }
    while (carry > 0) {
      bytes[length++] = carry & 0xff;
      carry >>= 8;
    }
  }
  const out = new Uint8Array(zeros + length);
  for (let i = 0; i < length; i++) out[zeros + i] = bytes[length - 1 - i] as number;
  return out;
}

export function encodeBase58(bytes: Uint8Array): string {
  let value = 0n;
  for (const b of bytes) value = (value << 8n) | BigInt(b);
  let out = '';
  while (value > 0n) {
    out = ALPHABET[Number(value % 58n)] + out;
    value /= 58n;
  }
  for (const b of bytes) {
    if (b !== 0) break;
    out = '1' + out;
  }
  return out;
}
