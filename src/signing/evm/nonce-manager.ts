import type { Redis } from 'ioredis';
import type { EvmChain } from '../../domain/chains.ts';
import type { Logger } from '../../log/logger.ts';
import { NonceLeaseBusyError, NoncePoolHeldError, SigningError, SIGNING_ERROR_CODES } from '../errors.ts';
import type { ChainReader, DoubtVerdict, NonceDoubt, NonceLease, NonceManager } from '../types.ts';
import {
  checkNonce,
  createChainNonceCache,
  MAX_SAFE_NONCE,
  type ChainNonceCache,
} from './chain-nonce-cache.ts';
import { createLease } from './nonce-lease.ts';
import { doubtMember, POOL_SCRIPTS, poolKeys, runPoolScript, type PoolKeys } from './nonce-pool-scripts.ts';
import { createWakeups, waitForWakeup, type Wakeups } from './nonce-wakeups.ts';

/*
 * Why this is money-safe, and what it is not responsible for.
 *
 * An ERC-2612 permit executes only when its nonce equals `nonces(owner)`, and executing it bumps
 * the nonce: so of all permits ever signed with one nonce, at most one can execute. Handing the same
 * nonce to two DIFFERENT transfers (after a refusal, after a dead holder's lease expired) can
 * therefore never pay twice: at worst one of them is refused, and that transfer signs again later.
 * What could pay twice is two live permits for the SAME transfer with different nonces; avoiding
 * that is the worker's job: it saves the signed permit before sending, re-sends it identically,
 * and asks for a new nonce only once the old permit is provably dead (never sent, first send
 * refused, or past its deadline with the chain nonce still at or below it).
 *
 * One more rule keeps the record of who paid honest: a permit presumed used (its answer was lost)
 * stays in the pool's review set until the chain settles it, and no permit is signed at or below
 * its nonce meanwhile. Otherwise another transfer's permit could take that nonce, and the chain's
 * "this nonce was used" would later be read as "the transfer in review was paid".
 *
 * What this module promises is order and liveness: one holder at a time per (chain, owner), so
 * permits reach the service one by one in nonce order, and never a nonce lower than one the
 * service already took (the chain's `nonces(owner)` lags the service: its transaction mines later).
 * The Redis layout is described in nonce-pool-scripts.ts.
 */

export type NonceManagerDeps = {
  /** A normal (non-subscriber) connection; the manager duplicates it once for wake-ups. */
  readonly redis: Redis;
  /** `QUEUE_PREFIX`. */
  readonly prefix: string;
  readonly chainReader: ChainReader;
  /** How long a lease lives without `extend()`; default 60 s. */
  readonly leaseMs?: number;
  /** Longest sleep between two tries while another holder has the lease; default 250 ms. */
  readonly maxWaitMs?: number;
  /** How long one reading of nonces(owner) serves later acquires; default 1 s. */
  readonly chainReadMaxAgeMs?: number;
  readonly logger?: Logger;
};

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
};

export type RedisNonceManager = NonceManager & {
  /** The pool of one (chain, owner) as stored (for `wallets`, dashboards and tests). */
  state(chain: EvmChain, owner: string): Promise<NonceState>;
  /** Closes the wake-up subscription (the caller's connection stays open). */
  close(): Promise<void>;
};

export const DEFAULT_NONCE_LEASE_MS = 60_000;

/** Everything the top-level functions below share. */
type Manager = {
  readonly redis: Redis;
  readonly prefix: string;
  readonly leaseMs: number;
  readonly maxWaitMs: number;
  readonly chain: ChainNonceCache;
  readonly wakeups: Wakeups;
  readonly logger: Logger | undefined;
  closed: boolean;
};

function closedError(): SigningError {
  return new SigningError(SIGNING_ERROR_CODES.nonceWaitAborted, 'The nonce manager is closed');
}

function abortError(chain: EvmChain, holder: string, signal: AbortSignal): SigningError {
  return new SigningError(
    SIGNING_ERROR_CODES.nonceWaitAborted,
    `Stopped waiting for the ${chain} nonce lease of ${holder}`,
    { cause: signal.reason },
  );
}

type AcquireReply = [number, string, string?];

/**
 * One try at the lease: a lease, a hold (thrown), or how long the current holder's lease has left.
 */
async function tryAcquire(m: Manager, keys: PoolKeys, holder: string): Promise<NonceLease | number> {
  const onChain = await m.chain.read(keys.pool, keys.chain, keys.owner);
  const r = (await runPoolScript(m.redis, POOL_SCRIPTS.acquire, keys, [
    holder,
    m.leaseMs,
    onChain?.toString() ?? '',
  ])) as AcquireReply;
  if (r[0] === 0) return Number(r[1]);
  if (r[0] === 3) throw new NoncePoolHeldError(Number(r[1]), r[2] ?? 'the nonce pool is held');
  const { chain, owner } = keys;
  if (r[2]) m.logger?.warn({ chain, owner, holder, expired: r[2] }, 'took over an expired nonce lease');
  const nonce = BigInt(r[1]);
  if (nonce > MAX_SAFE_NONCE) {
    await runPoolScript(m.redis, POOL_SCRIPTS.release, keys, [holder, keys.channel]);
    checkNonce(nonce, 'nonce'); // throws
  }
  m.logger?.debug(
    { chain, owner, holder, nonce: nonce.toString(), reentered: r[0] === 1 },
    'nonce lease acquired',
  );
  return createLease({ redis: m.redis, keys, leaseMs: m.leaseMs, logger: m.logger }, holder, nonce);
}

/** Waits for the lease of `keys` (woken by releases, polling at most every maxWaitMs). */
async function acquireLease(
  m: Manager,
  keys: PoolKeys,
  holder: string,
  signal: AbortSignal | undefined,
  once = false,
): Promise<NonceLease> {
  if (m.closed) throw closedError();
  if (once) {
    const got = await tryAcquire(m, keys, holder);
    if (typeof got === 'number') throw new NonceLeaseBusyError(keys.chain, keys.owner, got);
    return got;
  }
  // nonces(owner) only grows, so a value read before the lease is still a safe lower bound:
  // reading it while we wait keeps the read off the critical path of back-to-back permits.
  void m.chain.read(keys.pool, keys.chain, keys.owner);
  await m.wakeups.ready();
  for (;;) {
    if (signal?.aborted) throw abortError(keys.chain, holder, signal);
    if (m.closed) throw closedError();
    const waiter = m.wakeups.arm(keys.pool);
    let usedWakeup = false;
    try {
      const got = await tryAcquire(m, keys, holder);
      if (typeof got !== 'number') {
        usedWakeup = true;
        return got;
      }
      await waitForWakeup(waiter.woken, Math.max(1, Math.min(got, m.maxWaitMs)), signal);
      // Going round again uses the wake-up; leaving (aborted, closed) hands it on.
      usedWakeup = !signal?.aborted && !m.closed;
    } finally {
      waiter.disarm(!usedWakeup);
    }
  }
}

function parseDoubt(member: string, score: string): NonceDoubt {
  const bar = member.indexOf('|');
  return { nonce: BigInt(score), deadline: BigInt(member.slice(0, bar)), holder: member.slice(bar + 1) };
}

async function readDoubts(m: Manager, keys: PoolKeys, from: bigint): Promise<NonceDoubt[]> {
  const flat = await m.redis.zrangebyscore(keys.review, from.toString(), '+inf', 'WITHSCORES');
  const out: NonceDoubt[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push(parseDoubt(flat[i] as string, flat[i + 1] as string));
  return out;
}

async function presumeUsed(m: Manager, keys: PoolKeys, doubt: NonceDoubt): Promise<void> {
  const nonce = checkNonce(doubt.nonce, 'presumed-used nonce').toString();
  await runPoolScript(m.redis, POOL_SCRIPTS.commit, keys, [
    doubt.holder,
    nonce,
    keys.channel,
    doubtMember(doubt.deadline, doubt.holder),
  ]);
}

async function settleDoubt(
  m: Manager,
  keys: PoolKeys,
  doubt: NonceDoubt,
  verdict: DoubtVerdict,
): Promise<boolean> {
  const chainNonce = verdict.used ? '' : checkNonce(verdict.chainNonce, 'chain nonce').toString();
  m.chain.forget(keys.pool);
  const r = await runPoolScript(m.redis, POOL_SCRIPTS.settleDoubt, keys, [
    doubtMember(doubt.deadline, doubt.holder),
    verdict.used ? 'used' : 'unused',
    chainNonce,
    keys.channel,
  ]);
  if (r === 2)
    m.logger?.warn(
      { chain: keys.chain, owner: keys.owner, to: chainNonce, settled: doubt.holder },
      'nonce pool moved back: a presumed-used permit expired unused',
    );
  return r === 2;
}

async function readState(m: Manager, keys: PoolKeys): Promise<NonceState> {
  const [h, doubts] = await Promise.all([m.redis.hgetall(keys.pool), readDoubts(m, keys, 0n)]);
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
  };
}

/**
 * Redis-backed permit nonces per (chain, owner), shared by every worker process. See the comment at
 * the top of this file for the reasoning.
 */
export function createNonceManager(deps: NonceManagerDeps): RedisNonceManager {
  const m: Manager = {
    redis: deps.redis,
    prefix: deps.prefix,
    leaseMs: deps.leaseMs ?? DEFAULT_NONCE_LEASE_MS,
    maxWaitMs: deps.maxWaitMs ?? 250,
    chain: createChainNonceCache({
      reader: deps.chainReader,
      maxAgeMs: deps.chainReadMaxAgeMs ?? 1_000,
      logger: deps.logger,
    }),
    wakeups: createWakeups({
      redis: deps.redis,
      channel: `${deps.prefix}:nonce:released`,
      logger: deps.logger,
    }),
    logger: deps.logger,
    closed: false,
  };
  const keysOf = (chain: EvmChain, owner: string) => poolKeys(m.prefix, chain, owner);
  return {
    acquire: (chain, owner, holder, options = {}) =>
      acquireLease(m, keysOf(chain, owner), holder, options.signal, options.once),
    presumeUsed: (chain, owner, doubt) => presumeUsed(m, keysOf(chain, owner), doubt),
    doubts: (chain, owner, from) => readDoubts(m, keysOf(chain, owner), from),
    settleDoubt: (chain, owner, doubt, verdict) => settleDoubt(m, keysOf(chain, owner), doubt, verdict),
    state: (chain, owner) => readState(m, keysOf(chain, owner)),
    async close() {
      m.closed = true;
      await m.wakeups.close();
    },
  };
}
