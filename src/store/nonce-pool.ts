import type { Redis } from 'ioredis';
import { checksumEvmAddress } from '../domain/addresses.ts';
import type { EvmChain } from '../domain/chains.ts';
import { loadLuaScript, runScript, type LuaScript } from './lua-script.ts';

/*
 * The Redis side of one (chain, owner)'s permit-nonce pool (src/signing/evm/nonce-manager.ts runs it;
 * docs/nonces.md says why it is money-safe): every change is one script (./scripts/pool-*.lua), so
 * that every worker process sees a consistent pool, and every read is parsed here.
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

/** The pool's scripts: one file each in ./scripts/ (pool-*.lua), headed by its KEYS, ARGV and output. */
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

/** A permit presumed used (its answer was lost): the review set's member, by nonce. */
export type NonceDoubt = { readonly nonce: bigint; readonly deadline: bigint; readonly holder: string };

export type NonceState = {
  readonly next: bigint;
  readonly holder: string | null;
  readonly heldNonce: bigint | null;
  readonly leaseUntil: number | null;
  /** "<nonce>|<refused at ms>" while the holder waits for the chain after a refused permit. */
  readonly settling: string | null;
  /** Until when (ms) the pool is held, and why; null when it is not. */
  readonly holdUntil: number | null;
  readonly holdReason: string | null;
  /** Permits presumed used, not yet settled from the chain. */
  readonly doubts: readonly NonceDoubt[];
  /** The transfer preparing the next permit, the nonce it prepares, and until when it counts as alive. */
  readonly prepHolder: string | null;
  readonly prepNonce: bigint | null;
  readonly prepUntil: number | null;
  /** The waiter next in line for the prepare slot, and until when its place holds (0 once given). */
  readonly prepNext: string | null;
  readonly prepNextUntil: number | null;
  /** Leases handed straight from a committing holder to its preparer, ever. */
  readonly handoffs: number;
};

function parseDoubt(member: string, score: string): NonceDoubt {
  const bar = member.indexOf('|');
  return { nonce: BigInt(score), deadline: BigInt(member.slice(0, bar)), holder: member.slice(bar + 1) };
}

/** The presumed-used permits at or above nonce `from`, by nonce. */
export async function readDoubts(redis: Redis, keys: PoolKeys, from: bigint): Promise<NonceDoubt[]> {
  const flat = await redis.zrangebyscore(keys.review, from.toString(), '+inf', 'WITHSCORES');
  const out: NonceDoubt[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push(parseDoubt(flat[i] as string, flat[i + 1] as string));
  return out;
}

/** The holder that committed `nonce` as accepted (the pool's `used` set), if remembered. */
export async function readUsedBy(redis: Redis, keys: PoolKeys, nonce: bigint): Promise<string | undefined> {
  const n = nonce.toString();
  const members = await redis.zrangebyscore(keys.used, n, n);
  const member = members.find((x) => x.startsWith(`${n}|`));
  return member === undefined ? undefined : member.slice(n.length + 1);
}

/** The pool as stored, with its presumed-used permits. */
export async function readPoolState(redis: Redis, keys: PoolKeys): Promise<NonceState> {
  const [h, doubts] = await Promise.all([redis.hgetall(keys.pool), readDoubts(redis, keys, 0n)]);
  const num = (v: string | undefined) => (v === undefined ? null : Number(v));
  return {
    next: BigInt(h['next'] ?? '0'),
    holder: h['holder'] ?? null,
    heldNonce: h['held_nonce'] !== undefined ? BigInt(h['held_nonce']) : null,
    leaseUntil: num(h['lease_until']),
    settling: h['settling'] ?? null,
    holdUntil: num(h['hold_until']),
    holdReason: h['hold_reason'] ?? null,
    doubts,
    prepHolder: h['prep_holder'] ?? null,
    prepNonce: h['prep_nonce'] !== undefined ? BigInt(h['prep_nonce']) : null,
    prepUntil: num(h['prep_until']),
    prepNext: h['prep_next'] ?? null,
    prepNextUntil: num(h['prep_next_until']),
    handoffs: Number(h['handoffs'] ?? 0),
  };
}
