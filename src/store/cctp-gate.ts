import type { Redis } from 'ioredis';
import { createRateLimiter } from './rate-limiter.ts';
import { releaseTokenLock, takeTokenLock } from './token-lock.ts';

/*
 * What every worker shares on the CCTP road (docs/data-model.md "CCTP road"):
 * - `P:cctp:ratelimit`: the sliding second of requests to Circle's attestation API, all workers
 *   together under its limit (35 per second: Circle blocks a client over it for 5 minutes);
 * - `P:cctp:paused`: set for 5 minutes (PX) when the API answered 429: nobody asks until it expires;
 * - `P:cctp:lease:<chain>:<owner>`: which transfer approves and burns with that owner now (one at a
 *   time, so an approve never overwrites the allowance another transfer's burn counts on); its
 *   release publishes the key on `P:cctp:lease:released`, which wakes a transfer waiting for it.
 */

/** Circle's limit on the attestation API, per second, with a margin. */
export const CCTP_API_PER_SECOND = 30;

export function createCctpGate(deps: { readonly redis: Redis; readonly prefix: string }) {
  const { redis, prefix } = deps;
  const limiter = createRateLimiter({
    redis,
    prefix,
    perSecond: CCTP_API_PER_SECOND,
    name: 'cctp:ratelimit',
  });
  const pausedKey = `${prefix}:cctp:paused`;
  return {
    async pausedFor(): Promise<number> {
      const ms = await redis.pttl(pausedKey);
      return ms > 0 ? ms : 0;
    },
    async pause(ms: number): Promise<void> {
      await redis.set(pausedKey, String(Date.now() + ms), 'PX', ms);
    },
    take: () => limiter.take(),
  };
}

/** The key of the (chain, owner) lease: also what a release publishes, so its waiters know which. */
export const cctpLeaseKey = (prefix: string, chain: string, owner: string) =>
  `${prefix}:cctp:lease:${chain}:${owner.toLowerCase()}`;

/** The channel a release publishes the lease's key on: a transfer waiting for it tries again at once. */
export const cctpLeaseChannel = (prefix: string) => `${prefix}:cctp:lease:released`;

/**
 * Takes (or, for the holder that has it, renews) the (chain, owner) CCTP lease for `ttlMs`, in one
 * script (token-lock.ts takeTokenLock); whether `holder` has it now.
 */
export async function takeCctpLease(
  redis: Redis,
  prefix: string,
  at: { readonly chain: string; readonly owner: string; readonly holder: string; readonly ttlMs: number },
): Promise<boolean> {
  return await takeTokenLock(redis, cctpLeaseKey(prefix, at.chain, at.owner), at.holder, at.ttlMs);
}

/**
 * Gives the lease back (only while `holder` has it), and says so on the lease channel: a transfer
 * waiting for it in its job (in any process) is woken (a lost message costs only a look later).
 */
export async function releaseCctpLease(
  redis: Redis,
  prefix: string,
  at: { readonly chain: string; readonly owner: string; readonly holder: string },
): Promise<void> {
  const key = cctpLeaseKey(prefix, at.chain, at.owner);
  if (await releaseTokenLock(redis, key, at.holder)) await redis.publish(cctpLeaseChannel(prefix), key);
}
