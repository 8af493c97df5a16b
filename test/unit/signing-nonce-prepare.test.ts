import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { NoncePoolHeldError } from '../../src/signing/errors.ts';
import { createNonceManager, type RedisNonceManager } from '../../src/signing/evm/nonce-manager.ts';
import type { ChainReader, NonceLease } from '../../src/signing/types.ts';
import { waitFor } from '../helpers/cli.ts';
import { redisForSuite } from '../helpers/redis.ts';

/**
 * The pool's prepare slot (nonce-manager.ts): while a holder's permit n is in flight one waiter may
 * prepare n + 1, and a commit of n hands it the lease; every other decision about the next nonce
 * voids the slot. Real Redis; the chain is left out (no RPC: the pool decides).
 */

const OWNER = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';
const noRpc: ChainReader = {
  permitNonce: async () => undefined,
  permitNonceAtHead: async () => undefined,
  usdcBalance: async () => undefined,
  usdcBalanceAtHead: async () => undefined,
  txBlock: async () => undefined,
};

let suite: Awaited<ReturnType<typeof redisForSuite>>;
const connections: Redis[] = [];
const managers: RedisNonceManager[] = [];
let n = 0;

/** How many pool scripts each manager's connection has run: every look at the pool is one. */
const scriptRuns = new Map<RedisNonceManager, { n: number }>();
const looksOf = (m: RedisNonceManager): number => scriptRuns.get(m)?.n ?? 0;

/** A connection that counts the scripts run on it. */
function counted(redis: Redis, runs: { n: number }): Redis {
  return new Proxy(redis, {
    get(target, prop, receiver) {
      if (prop === 'evalsha' || prop === 'eval') {
        const call = (Reflect.get(target, prop, target) as (...a: unknown[]) => Promise<unknown>).bind(
          target,
        );
        return (...args: unknown[]) => {
          runs.n++;
          return call(...args);
        };
      }
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
}

/** One "process": its own connection and manager on a shared prefix. */
function manager(
  prefix: string,
  opts: {
    leaseMs?: number;
    prepareSlotMs?: number;
    maxWaitMs?: number;
    wakePreparerOnCommit?: () => boolean;
  } = {},
) {
  const redis = new Redis(suite.url, { maxRetriesPerRequest: 1 });
  connections.push(redis);
  const runs = { n: 0 };
  const m = createNonceManager({ redis: counted(redis, runs), prefix, chainReader: noRpc, ...opts });
  scriptRuns.set(m, runs);
  managers.push(m);
  return m;
}
const freshPrefix = () => `${suite.prefix}-prep-${++n}`;

/** A waiter that prepares: the nonces it was offered, and its acquire. */
function preparer(
  m: RedisNonceManager,
  chain: 'BASE' | 'ETH' | 'ARB' | 'POLYGON',
  holder: string,
  onPrepare: (nonce: bigint) => Promise<boolean> = async () => true,
  giveUpAfterMs?: number,
) {
  const offered: bigint[] = [];
  const acquired = m.acquire(chain, OWNER, holder, {
    ...(giveUpAfterMs === undefined ? {} : { giveUpAfterMs }),
    prepare: async (nonce) => {
      offered.push(nonce);
      return await onPrepare(nonce);
    },
  });
  acquired.catch(() => {}); // asserted where it matters
  return { offered, acquired };
}

/**
 * A holder of n on ARB commits while a waiter of the same manager has prepared n + 1: the lease the
 * waiter got within microtask turns of the commit being called (no I/O can come in meanwhile: only
 * a wake-up in this process brings it in), the commit, and the waiter's acquire.
 */
async function commitWithPreparer(m: RedisNonceManager) {
  const held = await m.acquire('ARB', OWNER, 'b/holder');
  const p = preparer(m, 'ARB', 'b/next');
  await waitFor('n + 1 prepared', async () => p.offered.length > 0);
  let inBeforeAnswer: NonceLease | undefined;
  void p.acquired.then((lease) => (inBeforeAnswer = lease));
  const committed = held.commit();
  for (let i = 0; i < 100 && inBeforeAnswer === undefined; i++) await Promise.resolve();
  return { m, inBeforeAnswer, committed, acquired: p.acquired };
}

function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

beforeAll(async () => {
  suite = await redisForSuite();
});
afterAll(async () => {
  for (const m of managers) await m.close();
  for (const c of connections) c.disconnect();
  await suite.close();
});

describe('nonce pool: preparing the next permit', () => {
  it('offers n + 1 to prepare only while a holder’s n is in flight, and to one waiter at a time', async () => {
    const m = manager(freshPrefix());
    // A free pool: the lease itself, nothing to prepare.
    const first = preparer(m, 'BASE', 'b/first');
    const lease = await first.acquired;
    expect(lease.nonce).toBe(0n);
    expect(first.offered).toEqual([]);

    const p = preparer(m, 'BASE', 'b/p');
    await waitFor('the preparer to be offered n + 1', async () => p.offered.length > 0);
    expect(p.offered).toEqual([1n]);
    expect(await m.state('BASE', OWNER)).toMatchObject({
      holder: 'b/first',
      prepHolder: 'b/p',
      prepNonce: 1n,
    });

    // A second waiter that could prepare is not offered the live slot; it gives up like any waiter.
    const q = preparer(m, 'BASE', 'b/q', undefined, 300);
    await expect(q.acquired).rejects.toMatchObject({ code: 'USDC_NONCE_WAIT_ABORTED' });
    expect(q.offered).toEqual([]);
    await lease.commit();
    expect((await p.acquired).nonce).toBe(1n);
  });

  it('hands the lease straight to the preparer when n is committed: n + 1, by name, across processes', async () => {
    const prefix = freshPrefix();
    const a = manager(prefix);
    // The preparer lives in another "process" whose polls are slow: only the hand-off's wake-up by
    // name brings it in before a poll would.
    const b = manager(prefix, { maxWaitMs: 60_000, prepareSlotMs: 60_000 });
    const held = await a.acquire('ETH', OWNER, 'b/holder');
    const p = preparer(b, 'ETH', 'b/next');
    await waitFor('n + 1 prepared', async () => p.offered.length > 0);
    const looked = looksOf(b);
    await held.commit();
    // Its next poll is 15 s away; the wake-up that names it brings it in without a look at the pool
    // (a poll would be one more script run on its connection): the hand-off, not a timer.
    const next = await p.acquired;
    expect(looksOf(b)).toBe(looked);
    expect(next.nonce).toBe(held.nonce + 1n);
    const state = await a.state('ETH', OWNER);
    expect(state).toMatchObject({ holder: 'b/next', heldNonce: 1n, next: 1n, handoffs: 1, prepHolder: null });
    // Handed over for a short while; confirming it (before its permit is sent) renews it to a full lease.
    expect((state.leaseUntil ?? 0) - Date.now()).toBeLessThanOrEqual(2_000);
    expect(await next.confirm()).toBe(true);
    expect(((await a.state('ETH', OWNER)).leaseUntil ?? 0) - Date.now()).toBeGreaterThan(50_000);
    await next.commit();
    expect((await a.acquire('ETH', OWNER, 'b/after')).nonce).toBe(2n);
  });

  it('wakes a preparer of this process as the commit is sent, where allowed: its confirm follows the commit on the connection', async () => {
    const slow = { maxWaitMs: 60_000, prepareSlotMs: 60_000 };
    const early = await commitWithPreparer(
      manager(freshPrefix(), { ...slow, wakePreparerOnCommit: () => true }),
    );
    expect(early.inBeforeAnswer?.nonce).toBe(1n);
    // Sent now, before the commit's answer was read: Redis runs it after the commit, so it holds.
    expect(await early.inBeforeAnswer!.confirm()).toBe(true);
    await early.committed;
    expect(await early.m.state('ARB', OWNER)).toMatchObject({ holder: 'b/next', heldNonce: 1n, handoffs: 1 });

    // Not allowed (the default: marks that a replica must hold): only the published wake-up brings it.
    const late = await commitWithPreparer(manager(freshPrefix(), slow));
    expect(late.inBeforeAnswer).toBeUndefined();
    await late.committed;
    expect((await late.acquired).nonce).toBe(1n);
  });

  it('gives the slot after the hand-off to the waiter next in line, by name, without its looking again', async () => {
    const prefix = freshPrefix();
    const a = manager(prefix);
    const held = await a.acquire('BASE', OWNER, 'b/holder');
    const p = preparer(a, 'BASE', 'b/p');
    await waitFor('n + 1 prepared', async () => p.offered.length > 0);
    // The next waiter lives in a "process" whose polls are far apart: it finds the slot taken and
    // stands in line for the one after it.
    const b = manager(prefix, { maxWaitMs: 60_000, prepareSlotMs: 60_000 });
    const w = preparer(b, 'BASE', 'b/w');
    await waitFor('in line', async () => (await a.state('BASE', OWNER)).prepNext === 'b/w');
    expect(looksOf(b)).toBe(1);
    expect(w.offered).toEqual([]);
    await held.commit();
    // The commit hands the lease to the preparer and gives the waiter in line nonce 2 to prepare.
    await waitFor('n + 2 offered by name', async () => w.offered.length > 0, { timeoutMs: 5_000 });
    expect(w.offered).toEqual([2n]);
    expect(looksOf(b)).toBe(1);
    expect(await a.state('BASE', OWNER)).toMatchObject({
      holder: 'b/p',
      heldNonce: 1n,
      prepHolder: 'b/w',
      prepNonce: 2n,
      prepNextUntil: 0,
    });
    const next = await p.acquired;
    expect(await next.confirm()).toBe(true);
    await next.commit();
    const last = await w.acquired;
    expect(last.nonce).toBe(2n);
    expect(looksOf(b)).toBe(1); // handed over by name too: no look at all after the first
    expect(await last.confirm()).toBe(true);
    await last.commit();
    expect(await a.state('BASE', OWNER)).toMatchObject({ next: 3n, holder: null, handoffs: 2 });
  });

  it('a waiter that gives up its place in line is not given the slot', async () => {
    const m = manager(freshPrefix());
    const held = await m.acquire('ETH', OWNER, 'b/holder');
    const p = preparer(m, 'ETH', 'b/p');
    await waitFor('n + 1 prepared', async () => p.offered.length > 0);
    const w = preparer(m, 'ETH', 'b/w', undefined, 300);
    await waitFor('in line', async () => (await m.state('ETH', OWNER)).prepNext === 'b/w');
    await expect(w.acquired).rejects.toMatchObject({ code: 'USDC_NONCE_WAIT_ABORTED' });
    expect(await m.state('ETH', OWNER)).toMatchObject({ prepNext: null, prepNextUntil: null });
    await held.commit();
    expect((await p.acquired).nonce).toBe(1n);
    expect(await m.state('ETH', OWNER)).toMatchObject({ holder: 'b/p', prepHolder: null });
    expect(w.offered).toEqual([]);
  });

  it('a hand-off lease that lapsed before its preparer confirmed it is not used', async () => {
    const prefix = freshPrefix();
    const m = manager(prefix, { prepareSlotMs: 300 });
    const held = await m.acquire('BASE', OWNER, 'b/holder');
    const p = preparer(manager(prefix, { prepareSlotMs: 300 }), 'BASE', 'b/stalled');
    await waitFor('n + 1 prepared', async () => p.offered.length > 0, { intervalMs: 20 });
    await held.commit();
    const handed = await p.acquired; // woken by name: the lease, not yet confirmed
    expect(handed.nonce).toBe(1n);
    // The preparer stalls past the 300 ms hand-off lease; another transfer takes the lease over.
    const other = await manager(prefix).acquire('BASE', OWNER, 'b/other');
    expect(other.nonce).toBe(1n);
    expect(await handed.confirm()).toBe(false);
    expect(await other.confirm()).toBe(true);
    expect((await m.state('BASE', OWNER)).holder).toBe('b/other');
  });

  it('does not hand over on a release: the preparer gets n back and must sign again', async () => {
    const m = manager(freshPrefix());
    const held = await m.acquire('ARB', OWNER, 'b/holder');
    const p = preparer(m, 'ARB', 'b/p');
    await waitFor('n + 1 prepared', async () => p.offered.length > 0);
    await held.release(); // permit n never sent, or refused: n goes back to the pool
    expect((await p.acquired).nonce).toBe(0n);
    expect(p.offered).toEqual([1n]);
    expect((await m.state('ARB', OWNER)).handoffs).toBe(0);
  });

  it('does not hand over on a presumed-used commit: the preparer acquires n + 1 the ordinary way', async () => {
    const m = manager(freshPrefix());
    const held = await m.acquire('POLYGON', OWNER, 'b/lost');
    const p = preparer(m, 'POLYGON', 'b/p');
    await waitFor('n + 1 prepared', async () => p.offered.length > 0);
    await held.presumeUsed(2_000_000_000n);
    const lease = await p.acquired;
    expect(lease.nonce).toBe(1n);
    expect(await m.state('POLYGON', OWNER)).toMatchObject({ handoffs: 0, holder: 'b/p' });
  });

  it('voids the slot when the holder moves to the chain’s nonce, and offers the new n + 1', async () => {
    const m = manager(freshPrefix());
    const held = await m.acquire('BASE', OWNER, 'b/holder');
    const p = preparer(m, 'BASE', 'b/p');
    await waitFor('n + 1 prepared', async () => p.offered.length > 0);
    await held.moveTo(5n); // the owner signed 0–4 elsewhere
    expect(await m.state('BASE', OWNER)).toMatchObject({ heldNonce: 5n });
    await waitFor('6 offered', async () => p.offered.includes(6n));
    await held.commit();
    expect((await p.acquired).nonce).toBe(6n);
    expect(p.offered).toEqual([1n, 6n]);
  });

  it('voids the slot while the holder settles a refusal, and offers nothing until it is decided', async () => {
    const m = manager(freshPrefix(), { maxWaitMs: 20 });
    const held = await m.acquire('ETH', OWNER, 'b/refused');
    const p = preparer(m, 'ETH', 'b/p');
    await waitFor('n + 1 prepared', async () => p.offered.length > 0);
    await held.extend({ refusedAt: Date.now() });
    expect(await m.state('ETH', OWNER)).toMatchObject({ prepHolder: null, settling: expect.any(String) });
    // The preparer looks again (and again) meanwhile, and is not given the slot.
    const looked = looksOf(m);
    await waitFor('the preparer to look again', async () => looksOf(m) >= looked + 5, {
      timeoutMs: 10_000,
      intervalMs: 10,
    });
    expect((await m.state('ETH', OWNER)).prepHolder).toBeNull();
    expect(p.offered).toEqual([1n]);
    await held.release();
    expect((await p.acquired).nonce).toBe(0n);
    expect(p.offered).toEqual([1n]);
  });

  it('voids the slot when the holder holds the pool: the preparer waits with the reason', async () => {
    const m = manager(freshPrefix());
    const held = await m.acquire('ARB', OWNER, 'b/holder');
    const p = preparer(m, 'ARB', 'b/p');
    await waitFor('n + 1 prepared', async () => p.offered.length > 0);
    await held.holdPool({ ms: 60_000, chainNonce: 0n, reason: 'b/x may still execute' });
    await expect(p.acquired).rejects.toBeInstanceOf(NoncePoolHeldError);
    expect(await m.state('ARB', OWNER)).toMatchObject({ holder: null, prepHolder: null });
  });

  it('voids the slot when a presumed-used permit is settled unused and the pool moves back', async () => {
    const m = manager(freshPrefix());
    await (await m.acquire('POLYGON', OWNER, 'b/lost')).presumeUsed(1_000n); // nonce 0 in review
    const held = await m.acquire('POLYGON', OWNER, 'b/holder');
    expect(held.nonce).toBe(1n);
    const p = preparer(m, 'POLYGON', 'b/p');
    await waitFor('n + 1 prepared', async () => p.offered.length > 0);
    expect(p.offered).toEqual([2n]);
    const doubt = { nonce: 0n, deadline: 1_000n, holder: 'b/lost' };
    expect(await m.settleDoubt('POLYGON', OWNER, doubt, { used: false, chainNonce: 0n })).toBe(true);
    // The holder's 1 is now above the pool's next (0): the chain will refuse it, so 2 is moot.
    expect(await m.state('POLYGON', OWNER)).toMatchObject({ next: 0n, prepHolder: null });
    // The preparer looks again meanwhile, and is not offered 2 (moot) nor anything else.
    const looked = looksOf(m);
    await waitFor('the preparer to look again', async () => looksOf(m) >= looked + 3, {
      timeoutMs: 10_000,
      intervalMs: 10,
    });
    expect((await m.state('POLYGON', OWNER)).prepHolder).toBeNull();
    expect(p.offered).toEqual([2n]);
    await held.release();
    expect((await p.acquired).nonce).toBe(0n);
  });

  it('a take-over of an expired lease voids the slot: the taker gets the unconfirmed n', async () => {
    const prefix = freshPrefix();
    const dead = await manager(prefix, { leaseMs: 400 }).acquire('BASE', OWNER, 'b/dead');
    const p = preparer(manager(prefix, { leaseMs: 400 }), 'BASE', 'b/p');
    await waitFor('n + 1 prepared', async () => p.offered.length > 0);
    const lease = await p.acquired; // the dead holder's lease lapsed: the preparer took it over
    expect(lease.nonce).toBe(dead.nonce);
    expect(await manager(prefix).state('BASE', OWNER)).toMatchObject({
      holder: 'b/p',
      prepHolder: null,
      handoffs: 0,
    });
  });

  it('a preparer that stops looking loses its slot: another prepares, and the lease is never handed to it', async () => {
    const prefix = freshPrefix();
    const m = manager(prefix, { prepareSlotMs: 300 });
    const held = await m.acquire('ETH', OWNER, 'b/holder');
    // This preparer hangs while it prepares (a process frozen or killed): it stops renewing the slot.
    const hang = deferred<boolean>();
    const frozen = preparer(manager(prefix, { prepareSlotMs: 300 }), 'ETH', 'b/frozen', () => hang.promise);
    await waitFor('the frozen preparer holds the slot', async () => frozen.offered.length > 0);
    const alive = preparer(m, 'ETH', 'b/alive');
    await waitFor('the slot lapsed and was offered again', async () => alive.offered.length > 0, {
      timeoutMs: 5_000,
      intervalMs: 20,
    });
    expect(await m.state('ETH', OWNER)).toMatchObject({ prepHolder: 'b/alive', prepNonce: 1n });
    await held.commit();
    expect((await alive.acquired).nonce).toBe(1n);
    hang.resolve(true);
    // The frozen one comes back as a plain participant: offered the next slot, handed the next lease.
    await waitFor('the frozen one offered n + 2', async () => frozen.offered.includes(2n));
    const now = await alive.acquired;
    await now.commit();
    expect((await frozen.acquired).nonce).toBe(2n);
    expect((await m.state('ETH', OWNER)).handoffs).toBe(2);
  });

  it('a waiter that may not prepare (its saved permit may have been processed) leaves the slot to others', async () => {
    const m = manager(freshPrefix());
    const held = await m.acquire('ARB', OWNER, 'b/holder');
    const uncertain = preparer(m, 'ARB', 'b/uncertain', async () => false);
    await waitFor('offered once', async () => uncertain.offered.length > 0);
    const other = preparer(m, 'ARB', 'b/other');
    await waitFor('offered to the other', async () => other.offered.length > 0);
    expect(uncertain.offered).toEqual([1n]); // never again in this acquire
    await held.commit();
    expect((await other.acquired).nonce).toBe(1n);
  });

  it('a lease handed to a preparer that then fails gives the nonce back to the pool', async () => {
    const m = manager(freshPrefix());
    const held = await m.acquire('POLYGON', OWNER, 'b/holder');
    const signing = deferred<boolean>();
    const p = preparer(m, 'POLYGON', 'b/p', () => signing.promise);
    await waitFor('preparing', async () => p.offered.length > 0);
    await held.commit(); // handed over while the preparer is still signing…
    expect((await m.state('POLYGON', OWNER)).holder).toBe('b/p');
    signing.reject(new Error('signer down')); // …which then fails: it never sent under the lease
    await expect(p.acquired).rejects.toThrow('signer down');
    expect(await m.state('POLYGON', OWNER)).toMatchObject({ holder: null, next: 1n });
    expect((await m.acquire('POLYGON', OWNER, 'b/next')).nonce).toBe(1n);
  });

  it('serialises many preparing holders across four "processes": each nonce used once, in order, one holder at a time', async () => {
    const prefix = freshPrefix();
    const procs = [0, 1, 2, 3].map(() => manager(prefix));
    let inside = 0;
    let maxInside = 0;
    const sent: { nonce: bigint; accepted: boolean }[] = [];
    /** Sends "the permit" under a lease: counted while in flight. */
    const send = async (lease: NonceLease, prepared: bigint | undefined) => {
      inside++;
      maxInside = Math.max(maxInside, inside);
      // The pipeline's rule: a prepared permit is sent only when the lease's nonce is its nonce.
      const entry = { nonce: prepared === lease.nonce ? prepared : lease.nonce, accepted: true };
      sent.push(entry);
      await new Promise((r) => setTimeout(r, 2));
      inside--;
      return entry;
    };
    await Promise.all(
      procs.flatMap((m, p) =>
        Array.from({ length: 25 }, async (_, i) => {
          let prepared: bigint | undefined;
          const lease = await m.acquire('BASE', OWNER, `batch/p${p}-${i}`, {
            prepare: async (nonce) => {
              prepared = nonce;
              return true;
            },
          });
          expect(await lease.confirm()).toBe(true);
          const entry = await send(lease, prepared);
          // every seventh permit is "refused on first send": its nonce goes back to the pool
          if (i % 7 === 6) {
            entry.accepted = false;
            await lease.release();
            const again = await m.acquire('BASE', OWNER, `batch/p${p}-${i}`);
            await send(again, undefined);
            await again.commit();
          } else {
            await lease.commit();
          }
        }),
      ),
    );
    expect(maxInside).toBe(1);
    // In the order they were sent, the accepted nonces are 0, 1, 2, … 99: no gap, none twice.
    expect(sent.filter((s) => s.accepted).map((s) => s.nonce)).toEqual(
      Array.from({ length: 100 }, (_, i) => BigInt(i)),
    );
    expect((await procs[0]!.state('BASE', OWNER)).handoffs).toBeGreaterThan(0);
  });
});
