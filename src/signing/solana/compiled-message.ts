import { MAX_SUPPORTED_TRANSACTION_VERSION, type CompiledTransactionMessage } from '@solana/kit';
import { encodeBase58 } from '../../domain/base58.ts';

/*
 * The compiled message of a legacy or v0 Solana transaction, read from its bytes into exactly the
 * object @solana/kit's getCompiledTransactionMessageDecoder() returns — the same fields, the same
 * optional ones left out, the same inputs refused — with the account keys base58-encoded by
 * domain/base58.ts instead of the kit's BigInt arithmetic, which was most of the worker's time in
 * the policy check (BENCHMARKS.md §2). test/unit/signing-solana-compiled-message.test.ts holds it to
 * the kit's decoder on generated messages, and on every truncation and many corruptions of them.
 *
 * Layout (docs.solana.com "Transactions"): [0x80 | version, v0 only] header (3 × u8), account keys
 * (shortU16 count, 32 bytes each), recent blockhash (32 bytes), instructions (shortU16 count; each
 * program index u8, account indices shortU16 + u8s, data shortU16 + bytes), and for v0 the address
 * table lookups (shortU16 count; each table key, writable and readonly indices as shortU16 + u8s).
 * Bytes after the message are not read, and a counted list whose count is past the end is empty,
 * as the kit reads them (the runtime refuses such a message; the policy sees what the kit saw).
 */

type Legacy = Extract<CompiledTransactionMessage, { version: 'legacy' }>;
type V0 = Extract<CompiledTransactionMessage, { version: 0 }>;
type Instruction = Legacy['instructions'][number];
type Lookup = NonNullable<V0['addressTableLookups']>[number];

const VERSION_FLAG = 0x80;
const MAX_SHORT_U16 = 0xffff;

/** A read position in the message bytes; every read throws past their end. */
type Cursor = { readonly bytes: Uint8Array; at: number };

/**
 * The message, or undefined for a later version the kit reads (the caller asks the kit); throws on
 * anything the kit's decoder refuses.
 */
export function decodeLegacyOrV0Message(bytes: Uint8Array): Legacy | V0 | undefined {
  const c: Cursor = { bytes, at: 0 };
  const first = u8(c);
  if ((first & VERSION_FLAG) === 0) {
    c.at = 0;
    return { ...body(c), version: 'legacy' };
  }
  const version = first ^ VERSION_FLAG;
  if (version > MAX_SUPPORTED_TRANSACTION_VERSION) throw new Error(`transaction version ${version}`);
  if (version !== 0) return undefined;
  // The kit's key order too: `version` first in a v0 message, last in a legacy one.
  const message = { version: 0 as const, ...body(c) };
  const addressTableLookups = array(c, lookup);
  return addressTableLookups.length === 0 ? message : { ...message, addressTableLookups };
}

/** What legacy and v0 messages share: header, static accounts, lifetime token, instructions. */
function body(c: Cursor): Omit<Legacy, 'version'> {
  const header = {
    numSignerAccounts: u8(c),
    numReadonlySignerAccounts: u8(c),
    numReadonlyNonSignerAccounts: u8(c),
  };
  const staticAccounts = array(c, address);
  const lifetimeToken = encodeBase58(take(c, 32));
  const instructions = array(c, instruction);
  return { header, staticAccounts, lifetimeToken, instructions } as Omit<Legacy, 'version'>;
}

function instruction(c: Cursor): Instruction {
  const programAddressIndex = u8(c);
  const accountIndices = array(c, u8);
  const data = take(c, shortU16(c));
  return {
    programAddressIndex,
    ...(accountIndices.length ? { accountIndices } : null),
    ...(data.byteLength ? { data } : null),
  } as Instruction;
}

function lookup(c: Cursor): Lookup {
  return {
    lookupTableAddress: address(c),
    writableIndexes: array(c, u8),
    readonlyIndexes: array(c, u8),
  } as Lookup;
}

const address = <A>(c: Cursor): A => encodeBase58(take(c, 32)) as A;

/** A shortU16-counted array of `item`s; none when the bytes end where its count would be (as the kit reads it). */
function array<T>(c: Cursor, item: (c: Cursor) => T): T[] {
  if (c.at >= c.bytes.length) return [];
  const n = shortU16(c);
  const out: T[] = [];
  for (let i = 0; i < n; i++) out.push(item(c));
  return out;
}

function u8(c: Cursor): number {
  const b = c.bytes[c.at];
  if (b === undefined) throw new Error('the message ends early');
  c.at++;
  return b;
}

/** `n` bytes, copied (as the kit's decoder gives them). */
function take(c: Cursor, n: number): Uint8Array {
  if (c.at + n > c.bytes.length) throw new Error('the message ends early');
  const out = c.bytes.slice(c.at, c.at + n);
  c.at += n;
  return out;
}

/** Solana's compact u16: seven bits a byte, least significant first, at most three bytes. */
function shortU16(c: Cursor): number {
  let value = 0;
  for (let i = 0; i < 3; i++) {
    const b = u8(c);
    value |= (b & 0x7f) << (7 * i);
    if ((b & 0x80) === 0) {
      if (value > MAX_SHORT_U16) throw new Error('a compact u16 above 65535');
      return value;
    }
  }
  throw new Error('a compact u16 longer than three bytes');
}
