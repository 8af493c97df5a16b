import type { Redis } from 'ioredis';
import type { EvmChain } from '../../domain/chains.ts';
import type { Logger } from '../../log/logger.ts';
import { NonceLeaseBusyError, NoncePoolHeldError, SigningError, SIGNING_ERROR_CODES } from '../errors.ts';
import type {
  AcquireOptions,
  ChainReader,
  DoubtVerdict,
  NonceDoubt,
  NonceLease,
  NonceManager,
} from '../types.ts';
import {
  checkNonce,
  createChainNonceCache,
  MAX_SAFE_NONCE,
  type ChainNonceCache,
} from './chain-nonce-cache.ts';
import { DEFAULT_HOLD_TIMES } from '../../domain/hold-times.ts';
import { createLease, type LeaseContext } from './nonce-lease.ts';
import {
  doubtMember,
  POOL_SCRIPTS,
  poolKeys,
  readDoubts,
  readPoolState,
  readUsedBy,
  runPoolScript,
  type NonceState,
  type PoolKeys,
} from '../../store/nonce-pool.ts';
import { createWakeups, waitForWakeup, type Wakeups } from './nonce-wakeups.ts';

// Why this is money-safe, and the prepared next permit (the serial section near zero): docs/nonces.md.

export type NonceManagerDeps = {
  /** A normal (non-subscriber) connection; the manager duplicates it once for wake-ups. */
  readonly redis: Redis;
  /** `QUEUE_PREFIX`. */
  readonly prefix: string;
  readonly chainReader: ChainReader;
  /** How long a lease lives without `extend()`; default 60 s (twice WORKER_LOCK_MS: domain/hold-times.ts). */
  readonly leaseMs?: number;
  /** Longest sleep between two tries while another holder has the lease; default 250 ms. */
  readonly maxWaitMs?: number;
  /** How long one reading of nonces(owner) serves later acquires; default 1 s. */
  readonly chainReadMaxAgeMs?: number;
  /**
   * How long a preparer counts as alive after it last looked (it looks again at least every
   * quarter of this), and how long a lease handed to it lasts until its acquire renews it; default 2 s.
   */
  readonly prepareSlotMs?: number;
  /**
   * Asked at each commit of an accepted permit: may the commit wake a preparer of the next nonce in
   * this process as it is sent, before its answer (nonce-wakeups.ts wakePreparer)? Only where the
   * send's mark need not reach a replica (docs/nonces.md): a mark acknowledged by a replica must
   * come after the commit in Redis's replication stream, which only the commit's answer ensures.
   * Default: never (the published wake-up only).
   */
  readonly wakePreparerOnCommit?: () => boolean;
  readonly logger?: Logger;
};

export type RedisNonceManager = NonceManager & {
  /** The pool of one (chain, owner) as stored (for `wallets`, dashboards and tests). */
  state(chain: EvmChain, owner: string): Promise<NonceState>;
  /**
   * Starts reading nonces(owner) now (a worker starting up), so that the first acquire does not wait
   * for the RPC: it only ever waits for a reading when it has none.
   */
  prefetch(chain: EvmChain, owner: string): void;
  waiting(chain: EvmChain, owner: string): number;
  /** Closes the wake-up subscription (the caller's connection stays open). */
  close(): Promise<void>;
};

export const DEFAULT_PREPARE_SLOT_MS = 2_000;
/** How many times maxWaitMs a waiter sleeps between two looks while another waiter is preparing. */
const IDLE_WAIT_FACTOR = 4;

/** Everything the top-level functions below share. */
type Manager = {
  readonly redis: Redis;
  readonly prefix: string;
  readonly leaseMs: number;
  readonly maxWaitMs: number;
  readonly prepMs: number;
  readonly wakeEarly: () => boolean;
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

/** One try at the lease: the lease, a wait, or (another holder in flight) the nonce to prepare. */
type Try =
  | { readonly kind: 'lease'; readonly lease: NonceLease }
  | {
      readonly kind: 'wait';
      readonly ms: number;
      readonly preparing: boolean;
      /** This waiter is next in line for the prepare slot (a commit may give it the slot by name). */
      readonly inLine: boolean;
    }
  | { readonly kind: 'prepare'; readonly nonce: bigint; readonly ms: number };

/** One try at the lease; a hold is thrown. */
async function tryAcquire(m: Manager, keys: PoolKeys, holder: string, mayPrepare: boolean): Promise<Try> {
  const onChain = await m.chain.read(keys.pool, keys.chain, keys.owner);
  const r = (await runPoolScript(m.redis, POOL_SCRIPTS.acquire, keys, [
    holder,
    m.leaseMs,
    onChain?.toString() ?? '',
    mayPrepare ? '1' : '',
    m.prepMs,
  ])) as AcquireReply;
  if (r[0] === 0) return { kind: 'wait', ms: Number(r[1]), preparing: r[2] !== '', inLine: r[2] === '2' };
  if (r[0] === 3) throw new NoncePoolHeldError(Number(r[1]), r[2] ?? 'the nonce pool is held');
  if (r[0] === 4)
    return { kind: 'prepare', nonce: checkNonce(BigInt(r[1]), 'prepared nonce'), ms: Number(r[2]) };
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
  return { kind: 'lease', lease: createLease(leaseContext(m, keys), holder, nonce) };
}

/** What a lease of `keys` needs from the manager; its commit wakes a local preparer of the next nonce. */
function leaseContext(m: Manager, keys: PoolKeys): LeaseContext {
  return {
    redis: m.redis,
    keys,
    leaseMs: m.leaseMs,
    handoffMs: m.prepMs,
    onCommitSent: (nonce) => {
      if (m.wakeEarly()) m.wakeups.wakePreparer(keys.pool, nonce + 1n);
    },
    logger: m.logger,
  };
}

function handedOver(m: Manager, keys: PoolKeys, holder: string, nonce: bigint): NonceLease {
  m.logger?.debug(
    { chain: keys.chain, owner: keys.owner, holder, nonce: nonce.toString() },
    'nonce lease handed over',
  );
  return createLease(leaseContext(m, keys), holder, nonce, { handedOver: true });
}

function gaveUp(chain: EvmChain, holder: string, ms: number): SigningError {
  return new SigningError(
    SIGNING_ERROR_CODES.nonceWaitAborted,
    `Gave up waiting for the ${chain} nonce lease of ${holder} after ${ms} ms`,
  );
}

/** Frees this holder's prepare slot, or a lease handed to it after it last looked (best effort). */
async function unprepare(m: Manager, keys: PoolKeys, holder: string): Promise<void> {
  try {
    const r = await runPoolScript(m.redis, POOL_SCRIPTS.unprepare, keys, [holder, keys.channel]);
    if (r === 2)
      m.logger?.info(
        { chain: keys.chain, owner: keys.owner, holder },
        'a preparer left the wait just as the lease was handed to it: the nonce went back to the pool',
      );
  } catch (err) {
    // The slot lapses by itself (prepareSlotMs), and so does a lease handed to it.
    m.logger?.warn({ err: { message: (err as Error).message } }, 'could not free a prepare slot');
  }
}

/** What one acquire knows about its own preparing. */
type Preparing = {
  /** It may still be offered the slot (it has a `prepare` and did not decline). */
  may: boolean;
  /** The nonce it prepared and saved, while the slot is its own. */
  nonce: bigint | undefined;
  /** When it was first offered the slot (it must free it on leaving without the lease). */
  since: number | undefined;
  /** It stood in line for the slot (it must give its place up on leaving without the lease). */
  inLine: boolean;
};

/** One acquire in progress: whose, for which pool, with what options, until when. */
type Acquiring = {
  readonly keys: PoolKeys;
  readonly holder: string;
  readonly options: AcquireOptions;
  /** When a waiter that is not preparing gives up (ms; Infinity without giveUpAfterMs). */
  readonly giveUpAt: number;
  readonly p: Preparing;
};

/** How long to wait before the next try, after `got` (not a lease); throws once it is time to give up. */
async function afterTry(m: Manager, a: Acquiring, got: Exclude<Try, { kind: 'lease' }>): Promise<number> {
  const { keys, holder, p, options, giveUpAt } = a;
  if (got.kind === 'prepare') {
    p.since ??= Date.now();
    if (p.nonce !== got.nonce) {
      if (!(await options.prepare!(got.nonce))) {
        // This transfer may not make a new permit now: let another waiter prepare.
        p.may = false;
        p.nonce = undefined;
        await unprepare(m, keys, holder);
        return 0;
      }
      p.nonce = got.nonce;
      m.logger?.debug(
        { chain: keys.chain, owner: keys.owner, holder, nonce: got.nonce.toString() },
        'next permit prepared',
      );
    }
    // A preparer waits for the hand-off whatever giveUpAfterMs says (it is next, its permit is
    // ready), but not for ever; it looks again well within its slot's life, to renew it (the
    // hand-off itself wakes it by name; a lost wake-up is caught by that look, well within the
    // hand-off lease, which lasts as long as the slot).
    if (Date.now() - p.since > m.leaseMs) throw gaveUp(keys.chain, holder, Date.now() - p.since);
    return Math.min(got.ms, m.prepMs / 4);
  }
  p.nonce = undefined; // the slot is gone (voided, or never ours)
  if (got.inLine) p.inLine = true;
  const left = giveUpAt - Date.now();
  if (left <= 0) throw gaveUp(keys.chain, holder, Math.round(options.giveUpAfterMs ?? 0));
  // While another waiter has the next permit ready, the hand-off does not depend on this one: the
  // commit wakes the preparer by name and either gives the slot after it to the waiter next in line
  // (by name too) or wakes one other waiter to take it. Looking again less often keeps a crowd of
  // waiters from costing more than the payments they wait for; the one in line looks again while
  // its place (alive for prepareSlotMs) still holds.
  const every = got.preparing ? m.maxWaitMs * IDLE_WAIT_FACTOR : m.maxWaitMs;
  return Math.min(got.ms, got.inLine ? Math.min(every, m.prepMs / 2) : every, left);
}

/**
 * Waits for the lease of `keys` (woken by releases and hand-offs, polling at most every maxWaitMs),
 * preparing the next permit when offered (see the top of this file).
 */
async function acquireLease(
  m: Manager,
  keys: PoolKeys,
  holder: string,
  options: AcquireOptions,
): Promise<NonceLease> {
  const { signal } = options;
  if (m.closed) throw closedError();
  if (options.once) {
    // One try, never preparing: an owner whose lease is taken is skipped, not waited for.
    const got = await tryAcquire(m, keys, holder, false);
    if (got.kind === 'lease') return got.lease;
    throw new NonceLeaseBusyError(keys.chain, keys.owner, got.ms);
  }
  // nonces(owner) only grows, so a value read before the lease is still a safe lower bound:
  // reading it while we wait keeps the read off the critical path of back-to-back permits.
  void m.chain.read(keys.pool, keys.chain, keys.owner);
  const giveUpAt = options.giveUpAfterMs === undefined ? Infinity : Date.now() + options.giveUpAfterMs;
  const p: Preparing = {
    may: options.prepare !== undefined,
    nonce: undefined,
    since: undefined,
    inLine: false,
  };
  let leased = false;
  /** The prepare slot a commit gave this waiter by name: taken without looking. */
  let given: Try | undefined;
  try {
    for (;;) {
      if (signal?.aborted) throw abortError(keys.chain, holder, signal);
      if (m.closed) throw closedError();
      // Armed before anything is awaited: a transfer that just chose this owner counts among its
      // waiters at once, so the next choice made in the same turn sees it (evm-owner.ts leastAwaited).
      const waiter = m.wakeups.arm(keys.pool, holder);
      let usedWakeup = false;
      try {
        await m.wakeups.ready();
        const got = given ?? (await tryAcquire(m, keys, holder, p.may));
        given = undefined;
        if (got.kind === 'lease') {
          usedWakeup = true;
          leased = true;
          return got.lease;
        }
        const ms = await afterTry(m, { keys, holder, options, giveUpAt, p }, got);
        waiter.preparing(p.nonce);
        if (ms > 0) await waitForWakeup(waiter.woken, Math.max(1, ms), signal);
        // Going round again uses the wake-up; leaving (aborted, closed) hands it on.
        usedWakeup = !signal?.aborted && !m.closed;
        if (usedWakeup && waiter.named() && p.nonce !== undefined) {
          // The commit handed the lease to this preparer at the nonce it prepared: no need to look.
          // Its confirm() renews the short hand-off lease in the round trip of the sending mark.
          leased = true;
          return handedOver(m, keys, holder, p.nonce);
        }
        const slot = waiter.slot();
        // The commit that handed the lease to the preparer before it gave this waiter the slot after
        // it (what a look would offer now): it prepares at once. A lost wake-up costs only time: a
        // look finds the slot its own.
        if (usedWakeup && slot !== undefined && p.may) given = { kind: 'prepare', nonce: slot, ms: m.prepMs };
      } finally {
        waiter.disarm(!usedWakeup);
      }
    }
  } finally {
    if (!leased && (p.since !== undefined || p.inLine)) await unprepare(m, keys, holder);
  }
}

async function presumeUsed(m: Manager, keys: PoolKeys, doubt: NonceDoubt): Promise<void> {
  const nonce = checkNonce(doubt.nonce, 'presumed-used nonce').toString();
  await runPoolScript(m.redis, POOL_SCRIPTS.commit, keys, [
    doubt.holder,
    nonce,
    keys.channel,
    doubtMember(doubt.deadline, doubt.holder),
    m.prepMs,
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

/**
 * Redis-backed permit nonces per (chain, owner), shared by every worker process. See the comment at
 * the top of this file for the reasoning.
 */
export function createNonceManager(deps: NonceManagerDeps): RedisNonceManager {
  const m: Manager = {
    redis: deps.redis,
    prefix: deps.prefix,
    leaseMs: deps.leaseMs ?? DEFAULT_HOLD_TIMES.nonceLeaseMs,
    maxWaitMs: deps.maxWaitMs ?? 250,
    prepMs: deps.prepareSlotMs ?? DEFAULT_PREPARE_SLOT_MS,
    wakeEarly: deps.wakePreparerOnCommit ?? (() => false),
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
    acquire: (chain, owner, holder, options = {}) => acquireLease(m, keysOf(chain, owner), holder, options),
    presumeUsed: (chain, owner, doubt) => presumeUsed(m, keysOf(chain, owner), doubt),
    doubts: (chain, owner, from) => readDoubts(m.redis, keysOf(chain, owner), from),
    usedBy: (chain, owner, nonce) => readUsedBy(m.redis, keysOf(chain, owner), nonce),
    settleDoubt: (chain, owner, doubt, verdict) => settleDoubt(m, keysOf(chain, owner), doubt, verdict),
    state: (chain, owner) => readPoolState(m.redis, keysOf(chain, owner)),
    waiting: (chain, owner) => m.wakeups.count(keysOf(chain, owner).pool),
    prefetch(chain, owner) {
      const keys = keysOf(chain, owner);
      void m.chain.read(keys.pool, chain, owner);
    },
    async close() {
      m.closed = true;
      await m.wakeups.close();
    },
  };
}
