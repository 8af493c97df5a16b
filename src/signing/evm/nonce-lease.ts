import type { Redis } from 'ioredis';
import type { Logger } from '../../log/logger.ts';
import { NonceLeaseLostError, SIGNING_ERROR_CODES } from '../errors.ts';
import type { NonceLease } from '../types.ts';
import { checkNonce } from './chain-nonce-cache.ts';
import { doubtMember, POOL_SCRIPTS, runPoolScript, type PoolKeys } from '../../store/nonce-pool.ts';

/** What a lease needs from its manager. */
export type LeaseContext = {
  readonly redis: Redis;
  readonly keys: PoolKeys;
  readonly leaseMs: number;
  /** How long a lease handed to a preparer lasts until its acquire renews it. */
  readonly handoffMs: number;
  /**
   * Called right after the commit of an accepted `nonce` was sent, before its answer: wakes a
   * preparer of nonce + 1 in this process (nonce-wakeups.ts wakePreparer), whose confirm then
   * follows the commit on the same connection.
   */
  readonly onCommitSent?: ((nonce: bigint) => void) | undefined;
  readonly logger?: Logger | undefined;
};

function leaseLost(ctx: LeaseContext, holder: string, nonce: bigint, what: string): NonceLeaseLostError {
  return new NonceLeaseLostError(
    SIGNING_ERROR_CODES.nonceLeaseLost,
    `The ${ctx.keys.chain} nonce lease of ${holder} expired and was taken by another transfer (${what})`,
    { meta: { chain: ctx.keys.chain, owner: ctx.keys.owner, holder, nonce: nonce.toString() } },
  );
}

/**
 * Commits `nonce` (accepted, or presumed used when `deadline` is given), whoever holds the lease
 * now: the permit may have executed, so its nonce is used either way. An accepted nonce committed
 * by its holder hands the lease to a live preparer of nonce + 1 (nonce-manager.ts).
 */
async function commitNonce(
  ctx: LeaseContext,
  holder: string,
  nonce: bigint,
  deadline: bigint | undefined,
): Promise<void> {
  const member = deadline === undefined ? '' : doubtMember(deadline, holder);
  const sent = runPoolScript(ctx.redis, POOL_SCRIPTS.commit, ctx.keys, [
    holder,
    nonce.toString(),
    ctx.keys.channel,
    member,
    ctx.handoffMs,
  ]);
  // A presumed-used commit never hands over (docs/nonces.md).
  if (deadline === undefined) ctx.onCommitSent?.(nonce);
  const held = await sent;
  if (held === 2)
    ctx.logger?.debug(
      { chain: ctx.keys.chain, owner: ctx.keys.owner, holder, nonce: nonce.toString() },
      'nonce committed; the lease went to the preparer of the next',
    );
  else if (held !== 1)
    ctx.logger?.warn(
      { chain: ctx.keys.chain, owner: ctx.keys.owner, holder, nonce: nonce.toString() },
      'nonce committed after its lease was lost',
    );
}

/**
 * One holder's use of a (chain, owner)'s nonces, from `acquire` until it commits, releases or
 * holds the pool. Every change goes through a pool script that checks the holder first. A lease
 * `handedOver` (its preparer was woken by name, acquire did not look) is confirmed by `confirm()`.
 */
export function createLease(
  ctx: LeaseContext,
  holder: string,
  initial: bigint,
  options: { handedOver?: boolean } = {},
): NonceLease {
  let nonce = initial;
  let done = false;
  let unconfirmed = options.handedOver === true;
  const lost = (what: string) => leaseLost(ctx, holder, nonce, what);
  const once = () => {
    const first = !done;
    done = true;
    return first;
  };
  return {
    get nonce() {
      return nonce;
    },
    async confirm() {
      if (!unconfirmed) return !done;
      const args = [holder, nonce.toString(), ctx.leaseMs];
      const held = (await runPoolScript(ctx.redis, POOL_SCRIPTS.confirm, ctx.keys, args)) === 1;
      if (held) unconfirmed = false;
      else
        ctx.logger?.warn(
          { chain: ctx.keys.chain, owner: ctx.keys.owner, holder, nonce: nonce.toString() },
          'a lease handed over was not held when its preparer confirmed it (it lapsed first, or the commit it was woken for did not hand it over): its permit is not sent',
        );
      return held;
    },
    async commit() {
      if (once()) await commitNonce(ctx, holder, nonce, undefined);
    },
    async presumeUsed(deadline) {
      if (once()) await commitNonce(ctx, holder, nonce, deadline);
    },
    async release() {
      if (once()) await runPoolScript(ctx.redis, POOL_SCRIPTS.release, ctx.keys, [holder, ctx.keys.channel]);
    },
    async extend(settling) {
      if (done) throw lost('extend after the lease was closed');
      const mark = settling ? `${nonce}|${settling.refusedAt}` : '';
      if ((await runPoolScript(ctx.redis, POOL_SCRIPTS.extend, ctx.keys, [holder, ctx.leaseMs, mark])) !== 1)
        throw lost('extend');
    },
    async moveTo(chainNonce) {
      if (done) throw lost('move after the lease was closed');
      const to = checkNonce(chainNonce, 'chain nonce').toString();
      if ((await runPoolScript(ctx.redis, POOL_SCRIPTS.moveTo, ctx.keys, [holder, to, ctx.leaseMs])) !== 1)
        throw lost('move');
      nonce = chainNonce;
    },
    async holdPool(hold) {
      if (!once()) return;
      const args = [holder, Math.max(1, Math.round(hold.ms)), hold.chainNonce.toString(), hold.reason];
      await runPoolScript(ctx.redis, POOL_SCRIPTS.hold, ctx.keys, [...args, ctx.keys.channel]);
    },
  };
}
