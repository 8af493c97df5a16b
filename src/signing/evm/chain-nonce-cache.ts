import type { EvmChain } from '../../domain/chains.ts';
import type { Logger } from '../../log/logger.ts';
import { SigningError, SIGNING_ERROR_CODES } from '../errors.ts';
import type { ChainReader } from '../types.ts';

// Nonces stay far below 2^53 in practice; Lua numbers are doubles, so refuse anything beyond.
export const MAX_SAFE_NONCE = BigInt(Number.MAX_SAFE_INTEGER);

export function checkNonce(n: bigint, what: string): bigint {
  if (n < 0n || n > MAX_SAFE_NONCE)
    throw new SigningError(SIGNING_ERROR_CODES.nonceOutOfRange, `${what} ${n} is out of the supported range`);
  return n;
}

/**
 * Lower bounds of the chain's `nonces(owner)` for the lease hand-off. nonces(owner) only grows, so
 * any earlier reading is a safe lower bound: one reading, shared by every local acquire and
 * refreshed at most every `maxAgeMs`, keeps the RPC round trip off the critical path of
 * back-to-back permits. It decides nothing else: conclusions about the chain are drawn from reads
 * at a known block (ChainReader.permitNonceAtHead).
 */
export type ChainNonceCache = {
  /** The chain's nonce (a lower bound), or undefined (no RPC, or it failed: the pool alone decides). */
  read(key: string, chain: EvmChain, owner: string): Promise<bigint | undefined>;
  forget(key: string): void;
};

async function readLowerBound(
  reader: ChainReader,
  logger: Logger | undefined,
  chain: EvmChain,
  owner: string,
): Promise<bigint | undefined> {
  try {
    const n = await reader.permitNonce(chain, owner);
    return n === undefined ? undefined : checkNonce(n, `${chain} nonces(owner)`);
  } catch (err) {
    logger?.warn(
      { chain, owner, err: { message: err instanceof Error ? err.message : String(err) } },
      'cannot read nonces(owner); using the nonce pool alone (a refused first send re-reads it)',
    );
    return undefined;
  }
}

/** One (chain, owner)'s readings: the newest that answered, and the read under way, if any. */
type Entry = {
  /** When the newest read was started (ms). */
  at: number;
  /** The newest reading that answered with a nonce. */
  last: bigint | undefined;
  /** The read under way (resolves to the newest answer, or the older reading if it failed). */
  pending: Promise<bigint | undefined> | undefined;
};

function startRead(entry: Entry, read: () => Promise<bigint | undefined>): Promise<bigint | undefined> {
  entry.at = Date.now();
  const pending = read().then((n) => {
    if (n !== undefined && (entry.last === undefined || n > entry.last)) entry.last = n;
    if (entry.pending === pending) entry.pending = undefined;
    return n ?? entry.last;
  });
  entry.pending = pending;
  return pending;
}

export function createChainNonceCache(deps: {
  reader: ChainReader;
  maxAgeMs: number;
  logger?: Logger | undefined;
}): ChainNonceCache {
  const entries = new Map<string, Entry>();
  return {
    read(key, chain, owner) {
      const read = () => readLowerBound(deps.reader, deps.logger, chain, owner);
      let entry = entries.get(key);
      if (!entry) {
        entry = { at: 0, last: undefined, pending: undefined };
        entries.set(key, entry);
      }
      // A max age of 0 never serves a reading again, even within its millisecond: every caller
      // waits for its own.
      if (deps.maxAgeMs <= 0) return startRead(entry, read);
      // Strictly younger than the max age: no new read.
      const stale = Date.now() - entry.at >= deps.maxAgeMs;
      const fresh = stale && !entry.pending ? startRead(entry, read) : entry.pending;
      // Any reading that answered is still a safe lower bound: serve it while a newer one is under
      // way — to every caller, not only the first — so a lease hand-off never waits for an RPC
      // round trip. Only with no reading yet does a caller wait for the one under way.
      if (entry.last !== undefined) return Promise.resolve(entry.last);
      return fresh ?? Promise.resolve(undefined);
    },
    forget(key) {
      entries.delete(key);
    },
  };
}
