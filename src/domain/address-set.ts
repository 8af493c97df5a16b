import { decodeBase58 } from './base58.ts';

/*
 * The addresses of a sanctions list, kept as bytes (one table of 20-byte keys for EVM addresses, one
 * of 32-byte keys for Solana ones): the keys side by side in the order they came, and an
 * open-addressing index of their numbers. A lookup is O(1), and a list of a million addresses is a
 * few typed arrays — about 30 MB, nothing for the garbage collector to walk — rather than a million
 * strings in a Set (BENCHMARKS.md, "Sanctions screening"). Adding a key writes it at the end of the
 * keys and one number in the index: a load touches one far place of memory per address, not two.
 */

const BASE58_SHAPE = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;

/** One table of fixed-width keys. */
class ByteTable {
  /** Key n (from 0) at bytes [n × width, (n + 1) × width). */
  private keys: Uint8Array;
  /**
   * Per slot, 0 (empty) or an entry: in the bits `mask` covers, the number of the key there plus one
   * (at most half the slots are used, so it fits); above them, the key's hash's own bits there. A
   * probe compares keys only where those bits agree: reading a key is a far read of memory.
   */
  private index: Uint32Array;
  private mask: number;
  private readonly width: number;
  size = 0;

  /** `expected`: how many keys it will likely hold (sized for them at once, not grown to them). */
  constructor(width: number, expected = 0) {
    let slots = 16;
    while (slots < expected * 2) slots *= 2;
    this.width = width;
    this.keys = new Uint8Array(Math.max(8, expected) * width);
    this.index = new Uint32Array(slots);
    this.mask = slots - 1;
  }

  /** Adds the key (`width` bytes of `src` from `at`); false when it was there already. */
  add(src: Uint8Array, at = 0): boolean {
    if ((this.size + 1) * 2 > this.index.length) this.growIndex();
    const w = this.width;
    const h = hashOf(src, at, w);
    const i = this.find(src, at, h);
    if (this.index[i] !== 0) return false;
    if ((this.size + 1) * w > this.keys.length) this.growKeys();
    for (let j = 0, o = this.size * w; j < w; j++, o++) this.keys[o] = src[at + j] as number;
    this.index[i] = (h & ~this.mask) | ++this.size;
    return true;
  }

  has(key: Uint8Array): boolean {
    return this.index[this.find(key, 0, hashOf(key, 0, this.width))] !== 0;
  }

  /** The slot holding the key (its hash `h`), or the empty slot where it would go (linear probing). */
  private find(src: Uint8Array, at: number, h: number): number {
    const { mask, width: w } = this;
    const high = h & ~mask;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const e = this.index[i] as number;
      if (e === 0) return i;
      if ((e & ~mask) === high && sameKey(this.keys, ((e & mask) - 1) * w, src, at, w)) return i;
    }
  }

  /** Doubles the index and places every key again (they are distinct: no comparison). */
  private growIndex(): void {
    const slots = this.index.length * 2;
    this.index = new Uint32Array(slots);
    const mask = (this.mask = slots - 1);
    const w = this.width;
    for (let n = 0; n < this.size; n++) {
      const h = hashOf(this.keys, n * w, w);
      let i = h & mask;
      while (this.index[i] !== 0) i = (i + 1) & mask;
      this.index[i] = (h & ~mask) | (n + 1);
    }
  }

  private growKeys(): void {
    const keys = new Uint8Array(this.keys.length * 2);
    keys.set(this.keys);
    this.keys = keys;
  }
}

/** Whether the `w` bytes of `a` from `at` are those of `b` from `bt`. */
function sameKey(a: Uint8Array, at: number, b: Uint8Array, bt: number, w: number): boolean {
  for (let j = 0; j < w; j++) if (a[at + j] !== b[bt + j]) return false;
  return true;
}

/** FNV-1a over the key's `width` bytes from `at` (vanity addresses share their first bytes: all of them count). */
function hashOf(src: Uint8Array, at: number, width: number): number {
  let h = 0x811c9dc5;
  for (let i = at; i < at + width; i++) h = Math.imul(h ^ (src[i] as number), 0x01000193);
  return h >>> 0;
}

const scratch = new Uint8Array(20);

/**
 * An EVM-shaped address's 20 bytes (0x and 40 hex digits, any case), in a scratch buffer valid until
 * the next call; undefined when the text is not of that shape. One pass over the characters: a
 * regular expression per line was most of the load time of a list of a million addresses.
 */
function evmBytes(address: string): Uint8Array | undefined {
  if (address.length !== 42 || address.charCodeAt(0) !== 48 || address.charCodeAt(1) !== 120)
    return undefined;
  for (let i = 0; i < 20; i++) {
    const hi = hexDigit(address.charCodeAt(2 + 2 * i));
    const lo = hexDigit(address.charCodeAt(3 + 2 * i));
    if (hi < 0 || lo < 0) return undefined;
    scratch[i] = (hi << 4) | lo;
  }
  return scratch;
}

/**
 * `evmBytes` of a text given as its bytes, `text[start, end)`: a list file read as bytes decodes
 * no string for a line that is an address and nothing else.
 */
function evmBytesOfText(text: Uint8Array, start: number, end: number): Uint8Array | undefined {
  if (end - start !== 42 || text[start] !== 48 || text[start + 1] !== 120) return undefined;
  for (let i = 0, o = start + 2; i < 20; i++, o += 2) {
    const hi = hexDigit(text[o] as number);
    const lo = hexDigit(text[o + 1] as number);
    if (hi < 0 || lo < 0) return undefined;
    scratch[i] = (hi << 4) | lo;
  }
  return scratch;
}

/** Each character code's value as a hex digit (0-9, A-F, a-f), or -1: one read, not three comparisons. */
const HEX_DIGITS = hexDigits();

function hexDigits(): Int8Array {
  const t = new Int8Array(256).fill(-1);
  for (let c = 48; c <= 57; c++) t[c] = c - 48; // 0-9
  for (let c = 65; c <= 70; c++) t[c] = c - 55; // A-F
  for (let c = 97; c <= 102; c++) t[c] = c - 87; // a-f
  return t;
}

/** A hex digit's value, or -1 (any code, a string's UTF-16 ones included). */
function hexDigit(c: number): number {
  return c < 256 ? (HEX_DIGITS[c] as number) : -1;
}

/** The Solana address's 32 bytes, or undefined when the text is not one. */
function solanaBytes(address: string): Uint8Array | undefined {
  if (!BASE58_SHAPE.test(address)) return undefined;
  const bytes = decodeBase58(address);
  return bytes?.length === 32 ? bytes : undefined;
}

/** What a listed text is: an EVM-shaped or a Solana-shaped address, or anything else. */
export type ScreenedKind = 'evm' | 'solana' | 'other';

/** A set of EVM addresses (compared without regard to case) and Solana addresses (exactly). */
export class AddressSet {
  private readonly evm: ByteTable;
  private readonly solana = new ByteTable(32);

  /** `expectedEvm`: how many EVM addresses it will likely hold (a hint: it grows past it). */
  constructor(expectedEvm = 0) {
    this.evm = new ByteTable(20, expectedEvm);
  }

  /** Adds the address; its kind (`other`: not kept), and whether it was new. */
  add(address: string): { kind: ScreenedKind; added: boolean } {
    const evm = evmBytes(address);
    if (evm) return { kind: 'evm', added: this.evm.add(evm) };
    const sol = solanaBytes(address);
    if (sol) return { kind: 'solana', added: this.solana.add(sol) };
    return { kind: 'other', added: false };
  }

  /**
   * Adds the EVM address written as the bytes `text[start, end)`, as `add` would its text: whether
   * it was new, or undefined (nothing added) when those bytes are not exactly an EVM address.
   */
  addEvmText(text: Uint8Array, start: number, end: number): boolean | undefined {
    const evm = evmBytesOfText(text, start, end);
    return evm && this.evm.add(evm);
  }

  has(address: string): boolean {
    const evm = evmBytes(address);
    if (evm) return this.evm.has(evm);
    const sol = solanaBytes(address);
    return sol !== undefined && this.solana.has(sol);
  }

  get size(): number {
    return this.evm.size + this.solana.size;
  }
}
