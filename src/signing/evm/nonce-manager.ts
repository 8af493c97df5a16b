import type { Redis } from 'ioredis';
import { luaScript, runScript, type LuaScript } from '../../store/lua-script.ts';
import { checksumEvmAddress } from '../../domain/addresses.ts';
import type { EvmChain } from '../../domain/chains.ts';
import type { Logger } from '../../log/logger.ts';
import { NonceLeaseLostError, SigningError, SIGNING_ERROR_CODES } from '../errors.ts';
import type { ChainReader, NonceLease, NonceManager } from '../types.ts';

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
 * What this module promises is order and liveness: one holder at a time per (chain, owner), so
 * permits reach the service one by one in nonce order, and never a nonce lower than one the
 * service already took (the chain's `nonces(owner)` lags the service: its transaction mines later).
 *
 * Redis hash `P:nonce:<CHAIN>:<owner>`:
 *   next        the lowest nonce not known to be used (by a committed permit, or on chain)
 *   holder      the transfer holding the lease ("batchId/transferId"), absent when free
 *   held_nonce  the holder's in-flight nonce, once chosen
 *   lease_until Redis TIME in ms (one clock for every machine) after which the lease may be taken
 */

const NOW_MS = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/**
 * ARGV: holder, lease ms, the chain's nonces(owner) or ''. Returns {1, held_nonce} on re-entry,
 * {2, nonce, expired_holder} when taken (nonce = max(next, chain); nonces below it are used, ours
 * committed or the chain's, so `next` moves up to it and a release gives back exactly this nonce),
 * {0, ms_left} when another holder has the lease.
 */
const ACQUIRE = `${NOW_MS}
local h = redis.call('HMGET', KEYS[1], 'holder', 'held_nonce', 'lease_until', 'next')
local holder, held, lease_until = h[1], h[2], tonumber(h[3] or '0')
if holder and holder ~= ARGV[1] and lease_until > now then
  return {0, tostring(lease_until - now)}
end
if holder == ARGV[1] and held then
  redis.call('HSET', KEYS[1], 'lease_until', now + tonumber(ARGV[2]))
  return {1, held}
end
local nxt = tonumber(h[4] or '0')
if ARGV[3] ~= '' and tonumber(ARGV[3]) > nxt then nxt = tonumber(ARGV[3]) end
local nonce = string.format('%d', nxt)
redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'lease_until', now + tonumber(ARGV[2]), 'next', nonce, 'held_nonce', nonce)
local expired = ''
if holder and holder ~= ARGV[1] then expired = holder .. '@' .. (held or '-') end
return {2, nonce, expired}
`;

/** Moves the holder's lease to a nonce the chain shows as next (the owner signed elsewhere). */
const SET_HELD = `${NOW_MS}
if redis.call('HGET', KEYS[1], 'holder') ~= ARGV[1] then return 0 end
local nxt = tonumber(redis.call('HGET', KEYS[1], 'next') or '0')
if tonumber(ARGV[2]) > nxt then redis.call('HSET', KEYS[1], 'next', ARGV[2]) end
redis.call('HSET', KEYS[1], 'held_nonce', ARGV[2], 'lease_until', now + tonumber(ARGV[3]))
return 1
`;

/** The permit may have executed: its nonce is used whoever holds the lease now. */
const COMMIT = `
local nxt = tonumber(redis.call('HGET', KEYS[1], 'next') or '0')
local after = tonumber(ARGV[2]) + 1
if after > nxt then redis.call('HSET', KEYS[1], 'next', string.format('%d', after)) end
if redis.call('HGET', KEYS[1], 'holder') == ARGV[1] then
  redis.call('HDEL', KEYS[1], 'holder', 'held_nonce', 'lease_until')
  redis.call('PUBLISH', ARGV[3], KEYS[1])
  return 1
end
return 0
`;

/** The permit can never execute: `next` stays at its nonce, which the next holder gets. */
const RELEASE = `
if redis.call('HGET', KEYS[1], 'holder') == ARGV[1] then
  redis.call('HDEL', KEYS[1], 'holder', 'held_nonce', 'lease_until')
  redis.call('PUBLISH', ARGV[2], KEYS[1])
  return 1
end
return 0
`;

/**
 * ARGV: the chain's nonce after a permit above it was proven dead (past its deadline, unused).
 * Moves `next` down to it; an in-flight holder keeps its nonce (a refusal will tell it).
 */
const REWIND = `
local nxt = tonumber(redis.call('HGET', KEYS[1], 'next') or '0')
if tonumber(ARGV[1]) < nxt then
  redis.call('HSET', KEYS[1], 'next', ARGV[1])
  return 1
end
return 0
`;

const EXTEND = `${NOW_MS}
if redis.call('HGET', KEYS[1], 'holder') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'lease_until', now + tonumber(ARGV[2]))
return 1
`;

type Script = LuaScript;
const script = luaScript;
const SCRIPTS = {
  acquire: script(ACQUIRE),
  setHeld: script(SET_HELD),
  commit: script(COMMIT),
  release: script(RELEASE),
  extend: script(EXTEND),
  rewind: script(REWIND),
};

const run = (redis: Redis, s: Script, key: string, args: (string | number)[]): Promise<unknown> =>
  runScript(redis, s, [key], args);

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
};

export type RedisNonceManager = NonceManager & {
  /** The pool of one (chain, owner) as stored (for `wallets`, dashboards and tests). */
  state(chain: EvmChain, owner: string): Promise<NonceState>;
  /** Closes the wake-up subscription (the caller's connection stays open). */
  close(): Promise<void>;
};

export const DEFAULT_NONCE_LEASE_MS = 60_000;
// Nonces stay far below 2^53 in practice; Lua numbers are doubles, so refuse anything beyond.
const MAX_SAFE_NONCE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * Redis-backed permit nonces per (chain, owner), shared by every worker process. See the comment at
 * the top of this file for the reasoning.
 */
export function createNonceManager(deps: NonceManagerDeps): RedisNonceManager {
  const { redis, prefix, chainReader, logger } = deps;
  const leaseMs = deps.leaseMs ?? DEFAULT_NONCE_LEASE_MS;
  const maxWaitMs = deps.maxWaitMs ?? 250;
  const chainReadMaxAgeMs = deps.chainReadMaxAgeMs ?? 1_000;
  const channel = `${prefix}:nonce:released`;
  const keyOf = (chain: EvmChain, owner: string) => `${prefix}:nonce:${chain}:${checksumEvmAddress(owner)}`;

  // Wake-ups: a release or commit publishes the key and one local waiter on that key (the longest
  // waiting one not yet woken) tries again at once, so the next holder starts within a round trip
  // instead of a polling interval, without every waiter of every process hitting Redis at once.
  type Waiter = { wake(): void; woken: boolean };
  const waiters = new Map<string, Set<Waiter>>();
  const wakeOne = (key: string) => {
    for (const w of waiters.get(key) ?? []) {
      if (w.woken) continue;
      w.wake();
      return;
    }
  };
  let subscriber: Redis | undefined;
  let subscribed: Promise<void> | undefined;
  let closed = false;
  const ensureSubscribed = (): Promise<void> => {
    if (subscribed) return subscribed;
    subscriber = redis.duplicate({ maxRetriesPerRequest: null, lazyConnect: false });
    subscriber.on('error', (err: Error) =>
      logger?.warn({ err: { message: err.message } }, 'nonce wake-up connection error'),
    );
    subscriber.on('message', (_channel: string, key: string) => {
      wakeOne(key);
    });
    subscribed = subscriber.subscribe(channel).then(
      () => undefined,
      // Without wake-ups the waiters still poll every maxWaitMs: slower, never stuck.
      (err: unknown) => logger?.warn({ err: { message: String(err) } }, 'nonce wake-up subscription failed'),
    );
    return subscribed;
  };
  const arm = (key: string) => {
    let resolve!: () => void;
    const woken = new Promise<void>((r) => (resolve = r));
    const waiter: Waiter = {
      woken: false,
      wake() {
        waiter.woken = true;
        resolve();
      },
    };
    let set = waiters.get(key);
    if (!set) waiters.set(key, (set = new Set()));
    set.add(waiter);
    return {
      woken,
      /** Leaves the queue; a wake-up this waiter will not use goes to the next one. */
      disarm: (handOn: boolean) => {
        set.delete(waiter);
        if (set.size === 0) waiters.delete(key);
        if (handOn && waiter.woken) wakeOne(key);
      },
    };
  };

  const checkNonce = (n: bigint, what: string): bigint => {
    if (n < 0n || n > MAX_SAFE_NONCE)
      throw new SigningError(
        SIGNING_ERROR_CODES.nonceOutOfRange,
        `${what} ${n} is out of the supported range`,
      );
    return n;
  };

  /** The chain's nonces(owner), or undefined (no RPC, or it failed: the pool alone decides). */
  async function readChain(chain: EvmChain, owner: string): Promise<bigint | undefined> {
    try {
      const n = await chainReader.permitNonce(chain, owner);
      return n === undefined ? undefined : checkNonce(n, `${chain} nonces(owner)`);
    } catch (err) {
      logger?.warn(
        { chain, owner, err: { message: err instanceof Error ? err.message : String(err) } },
        'cannot read nonces(owner); using the nonce pool alone (a refused first send re-reads it)',
      );
      return undefined;
    }
  }

  // nonces(owner) only grows, so any earlier reading is a safe lower bound: one reading, shared by
  // every local acquire and refreshed at most every chainReadMaxAgeMs, keeps the RPC round trip off
  // the critical path of back-to-back permits. An owner who signed elsewhere since is caught by the
  // refused first send and refreshFromChain, which always reads afresh.
  const chainCache = new Map<string, { at: number; value: Promise<bigint | undefined> }>();
  function chainNonce(key: string, chain: EvmChain, owner: string): Promise<bigint | undefined> {
    const hit = chainCache.get(key);
    if (hit && Date.now() - hit.at <= chainReadMaxAgeMs) return hit.value;
    const entry = { at: Date.now(), value: readChain(chain, owner) };
    chainCache.set(key, entry);
    // A stale reading that answered is still a safe lower bound: use it now and let the fresh one
    // land for the next acquire, so a lease hand-off never waits for an RPC round trip.
    if (hit) {
      return hit.value.then(
        (old) => (old === undefined ? entry.value : old),
        () => entry.value,
      );
    }
    return entry.value;
  }

  function makeLease(
    chain: EvmChain,
    owner: string,
    key: string,
    holder: string,
    initial: bigint,
  ): NonceLease {
    let nonce = initial;
    let done = false;
    const lost = (what: string) =>
      new NonceLeaseLostError(
        SIGNING_ERROR_CODES.nonceLeaseLost,
        `The ${chain} nonce lease of ${holder} expired and was taken by another transfer (${what})`,
        { meta: { chain, owner, holder, nonce: nonce.toString() } },
      );
    return {
      get nonce() {
        return nonce;
      },
      async commit() {
        if (done) return;
        done = true;
        const held = await run(redis, SCRIPTS.commit, key, [holder, nonce.toString(), channel]);
        if (held !== 1)
          logger?.warn(
            { chain, owner, holder, nonce: nonce.toString() },
            'nonce committed after its lease was lost',
          );
      },
      async release() {
        if (done) return;
        done = true;
        await run(redis, SCRIPTS.release, key, [holder, channel]);
      },
      async extend() {
        if (done) throw lost('extend after the lease was closed');
        if ((await run(redis, SCRIPTS.extend, key, [holder, leaseMs])) !== 1) throw lost('extend');
      },
      async refreshFromChain() {
        if (done) throw lost('refresh after the lease was closed');
        const onChain = await readChain(chain, owner);
        if (onChain === undefined || onChain <= nonce) return undefined;
        if ((await run(redis, SCRIPTS.setHeld, key, [holder, onChain.toString(), leaseMs])) !== 1)
          throw lost('refresh');
        logger?.info(
          { chain, owner, holder, from: nonce.toString(), to: onChain.toString() },
          'permit nonce moved on chain; signing again with the chain nonce',
        );
        nonce = onChain;
        return onChain;
      },
    };
  }

  return {
    async rewind(chain, owner, onChain) {
      const key = keyOf(chain, owner);
      chainCache.delete(key);
      if ((await run(redis, SCRIPTS.rewind, key, [checkNonce(onChain, 'rewind nonce').toString()])) === 1) {
        logger?.warn(
          { chain, owner, to: onChain.toString() },
          'nonce pool moved back: a presumed-used permit expired unused',
        );
      }
    },
    async acquire(chain, owner, holder, options = {}) {
      const { signal } = options;
      const key = keyOf(chain, owner);
      if (closed) throw new SigningError(SIGNING_ERROR_CODES.nonceWaitAborted, 'The nonce manager is closed');
      // nonces(owner) only grows, so a value read before the lease is still a safe lower bound:
      // reading it while we wait keeps the read off the critical path of back-to-back permits.
      void chainNonce(key, chain, owner); // warm the reading while we wait for the lease
      await ensureSubscribed();
      for (;;) {
        if (signal?.aborted) throw abortError(chain, holder, signal);
        if (closed)
          throw new SigningError(SIGNING_ERROR_CODES.nonceWaitAborted, 'The nonce manager is closed');
        const waiter = arm(key);
        let settled = false;
        try {
          const onChain = await chainNonce(key, chain, owner);
          const r = (await run(redis, SCRIPTS.acquire, key, [
            holder,
            leaseMs,
            onChain?.toString() ?? '',
          ])) as [number, string, string?];
          if (r[0] === 1 || r[0] === 2) {
            settled = true;
            if (r[2])
              logger?.warn({ chain, owner, holder, expired: r[2] }, 'took over an expired nonce lease');
            const nonce = BigInt(r[1]);
            if (nonce > MAX_SAFE_NONCE) {
              await run(redis, SCRIPTS.release, key, [holder, channel]);
              checkNonce(nonce, 'nonce'); // throws
            }
            logger?.debug(
              { chain, owner, holder, nonce: nonce.toString(), reentered: r[0] === 1 },
              'nonce lease acquired',
            );
            return makeLease(chain, owner, key, holder, nonce);
          }
          const msLeft = Number(r[1]);
          await waitFor(waiter.woken, Math.max(1, Math.min(msLeft, maxWaitMs)), signal);
          // Going round again uses the wake-up; leaving (aborted, closed) hands it on.
          settled = !signal?.aborted && !closed;
        } finally {
          waiter.disarm(!settled);
        }
      }
    },

    async state(chain, owner) {
      const h = await redis.hgetall(keyOf(chain, owner));
      return {
        next: BigInt(h['next'] ?? '0'),
        holder: h['holder'] ?? null,
        heldNonce: h['held_nonce'] !== undefined ? BigInt(h['held_nonce']) : null,
        leaseUntil: h['lease_until'] !== undefined ? Number(h['lease_until']) : null,
      };
    },

    async close() {
      closed = true;
      for (const set of waiters.values()) for (const w of set) w.wake();
      const s = subscriber;
      subscriber = undefined;
      if (s) await s.quit().catch(() => s.disconnect());
    },
  };
}

function abortError(chain: EvmChain, holder: string, signal: AbortSignal): SigningError {
  return new SigningError(
    SIGNING_ERROR_CODES.nonceWaitAborted,
    `Stopped waiting for the ${chain} nonce lease of ${holder}`,
    {
      cause: signal.reason,
    },
  );
}

async function waitFor(woken: Promise<void>, ms: number, signal: AbortSignal | undefined): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    await Promise.race([
      woken,
      new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
      new Promise<void>((resolve) => {
        if (!signal) return;
        onAbort = resolve;
        signal.addEventListener('abort', onAbort, { once: true });
      }),
    ]);
  } finally {
    if (timer) clearTimeout(timer);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  }
}
