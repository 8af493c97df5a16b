import type { Redis } from 'ioredis';
import { checksumEvmAddress } from '../../domain/addresses.ts';
import type { EvmChain } from '../../domain/chains.ts';
import { loadLuaScript, runScript, type LuaScript } from '../../store/lua-script.ts';

/*
 * The Redis side of one (chain, owner)'s permit-nonce pool. Every change is one script (./scripts/),
 * so that every worker process sees a consistent pool. See nonce-manager.ts for why this is money-safe.
 *
 * HASH `P:nonce:<CHAIN>:<owner>`:
 *   next         the lowest nonce not known to be used (by a committed permit, or on chain)
 *   holder       the transfer holding the lease ("batchId/transferId"), absent when free
 *   held_nonce   the holder's in-flight nonce, once chosen
 *   lease_until  Redis TIME in ms (one clock for every machine) after which the lease may be taken
 *   settling     "<nonce>|<refused at, ms>" while the holder waits for the chain after a refusal
 *   hold_until   Redis TIME in ms until which no lease is handed out (the pool is held)
 *   hold_chain   the chain's nonce when the hold began: a reading above it ends the hold early
 *   hold_reason  why the pool is held, shown on every transfer that waits for it
 *   prep_holder  the transfer preparing the next permit while the holder's is in flight (the prepare
 *                slot; nonce-manager.ts says why this is safe)
 *   prep_nonce   the nonce it prepares: held_nonce + 1 when it was recorded
 *   prep_until   Redis TIME in ms until which the preparer counts as alive (it renews this each time
 *                it looks again); a slot past it is free and is never handed the lease
 *   prep_next    a waiter that may prepare and found the slot taken: next in line for the slot after
 *                it, which the commit handing the lease to the preparer gives it (pool-commit.lua)
 *   prep_next_until  Redis TIME in ms until which that place in line holds (renewed each time it
 *                looks; 0 once the slot was given)
 *   handoffs     how many times a commit handed the lease straight to a preparer (a counter)
 *
 * ZSET `P:nonce:<CHAIN>:<owner>:review`: permits presumed used (their answer was lost; their
 * transfer is `needs_review`), member "<deadline, unix s>|<batchId>/<transferId>", score = nonce.
 * While one could still execute, no permit is signed at or below its nonce: the pool moves back
 * below a presumed-used nonce only once no presumed-used permit at or above it is left.
 *
 * ZSET `P:nonce:<CHAIN>:<owner>:used`: the nonces committed as accepted by the service
 * (pool-commit.lua), at least the last 1,000 (trimmed to them when a multiple of 64 is committed),
 * member "<nonce>|<batchId>/<transferId>", score = nonce: which transfer's permit used a nonce, so
 * that a saved permit of another transfer with that nonce is known not to have paid
 * (pipeline/evm/permit-discard.ts). Written only after the service accepted the permit.
 */

/** The keys of one (chain, owner)'s pool. */
export type PoolKeys = {
  readonly chain: EvmChain;
  readonly owner: string;
  readonly pool: string;
  readonly review: string;
  /** The nonces committed as accepted, and by which transfer (the `used` set above). */
  readonly used: string;
  /** The channel a release publishes on, so a waiter in any process tries again at once. */
  readonly channel: string;
};

export function poolKeys(prefix: string, chain: EvmChain, owner: string): PoolKeys {
  const pool = `${prefix}:nonce:${chain}:${checksumEvmAddress(owner)}`;
  return {
    chain,
    owner,
    pool,
    review: `${pool}:review`,
    used: `${pool}:used`,
    channel: `${prefix}:nonce:released`,
  };
}

/** The pool's scripts: one file each in ./scripts/, headed by its KEYS, ARGV and output. */
const SCRIPTS = new URL('./scripts/', import.meta.url);

export const POOL_SCRIPTS = {
  acquire: loadLuaScript(SCRIPTS, 'pool-acquire.lua'),
  moveTo: loadLuaScript(SCRIPTS, 'pool-move-to.lua'),
  commit: loadLuaScript(SCRIPTS, 'pool-commit.lua'),
  release: loadLuaScript(SCRIPTS, 'pool-release.lua'),
  extend: loadLuaScript(SCRIPTS, 'pool-extend.lua'),
  hold: loadLuaScript(SCRIPTS, 'pool-hold.lua'),
  unprepare: loadLuaScript(SCRIPTS, 'pool-unprepare.lua'),
  confirm: loadLuaScript(SCRIPTS, 'pool-confirm.lua'),
  settleDoubt: loadLuaScript(SCRIPTS, 'pool-settle-doubt.lua'),
} as const satisfies Record<string, LuaScript>;

export function runPoolScript(
  redis: Redis,
  script: LuaScript,
  keys: PoolKeys,
  args: readonly (string | number)[],
): Promise<unknown> {
  return runScript(redis, script, [keys.pool, keys.review, keys.used], args);
}

/** The review member of a presumed-used permit. */
export function doubtMember(deadline: bigint, holder: string): string {
  return `${deadline}|${holder}`;
}
