import { decodeBase58 } from './base58.ts';

/*
 * The addresses of a sanctions list, kept as bytes in open-addressing hash tables (one of 20-byte
 * slots for EVM addresses, one of 32-byte slots for Solana ones): a lookup is O(1), and a list of a
 * million addresses is a few typed arrays — about 40 MB, nothing for the garbage collector to walk —
 * rather than a million strings in a Set (BENCHMARKS.md, "Sanctions screening").
 */

const BASE58_SHAPE = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;

/** One table of fixed-width keys. */
class ByteTable {
  private slots: Uint8Array;
  private used: Uint8Array;
  private mask: number;
  private readonly width: number;
  size = 0;

  constructor(width: number) {
    this.width = width;
    this.slots = new Uint8Array(16 * width);
    this.used = new Uint8Array(16);
    this.mask = 15;
  }

  /** Adds the key; false when it was there already. */
  add(key: Uint8Array): boolean {
    if ((this.size + 1) * 2 > this.used.length) this.grow();
    const i = this.find(key);
    if (this.used[i] === 1) return false;
    this.used[i] = 1;
    this.slots.set(key, i * this.width);
    this.size++;
    return true;
  }

  has(key: Uint8Array): boolean {
    return this.used[this.find(key)] === 1;
  }

  /** The slot holding the key, or the empty slot where it would go (linear probing). */
  private find(key: Uint8Array): number {
    const w = this.width;
    for (let i = hashOf(key) & this.mask; ; i = (i + 1) & this.mask) {
      if (this.used[i] !== 1) return i;
      let same = true;
      for (let j = 0, o = i * w; j < w; j++, o++) {
        if (this.slots[o] !== key[j]) {
          same = false;
          break;
        }
      }
      if (same) return i;
    }
  }

  private grow(): void {
    const old = { slots: this.slots, used: this.used };
    const capacity = old.used.length * 2;
    this.slots = new Uint8Array(capacity * this.width);
    this.used = new Uint8Array(capacity);
    this.mask = capacity - 1;
    this.size = 0;
    for (let i = 0; i < old.used.length; i++) {
      if (old.used[i] === 1) this.add(old.slots.subarray(i * this.width, (i + 1) * this.width));
    }
  }
}

/** FNV-1a over the key's bytes (vanity addresses share their first bytes: all of them count). */
function hashOf(key: Uint8Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ (key[i] as number), 0x01000193);
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

/** A hex digit's value, or -1. */
function hexDigit(c: number): number {
  if (c >= 48 && c <= 57) return c - 48; // 0-9
  if (c >= 65 && c <= 70) return c - 55; // A-F
  if (c >= 97 && c <= 102) return c - 87; // a-f
  return -1;
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
  private readonly evm = new ByteTable(20);
  private readonly solana = new ByteTable(32);

  /** Adds the address; its kind (`other`: not kept), and whether it was new. */
  add(address: string): { kind: ScreenedKind; added: boolean } {
    const evm = evmBytes(address);
    if (evm) return { kind: 'evm', added: this.evm.add(evm) };
    const sol = solanaBytes(address);
    if (sol) return { kind: 'solana', added: this.solana.add(sol) };
    return { kind: 'other', added: false };
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
