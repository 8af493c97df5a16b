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

export function createChainNonceCache(deps: {
  reader: ChainReader;
  maxAgeMs: number;
  logger?: Logger | undefined;
}): ChainNonceCache {
  const entries = new Map<string, { at: number; value: Promise<bigint | undefined> }>();
  return {
    read(key, chain, owner) {
      const hit = entries.get(key);
      // Strictly younger: a max age of 0 never serves a reading again, even within its millisecond.
      if (hit && Date.now() - hit.at < deps.maxAgeMs) return hit.value;
      const entry = { at: Date.now(), value: readLowerBound(deps.reader, deps.logger, chain, owner) };
      entries.set(key, entry);
      // A stale reading that answered is still a safe lower bound: use it now and let the fresh one
      // land for the next acquire, so a lease hand-off never waits for an RPC round trip.
      if (hit) {
        return hit.value.then(
          (old) => (old === undefined ? entry.value : old),
          () => entry.value,
        );
      }
      return entry.value;
    },
    forget(key) {
      entries.delete(key);
    },
  };
}
