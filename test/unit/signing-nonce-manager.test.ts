import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { createLogger } from '../../src/log/logger.ts';
import { NoncePoolHeldError } from '../../src/signing/errors.ts';
import { createNonceManager, type RedisNonceManager } from '../../src/signing/evm/nonce-manager.ts';
import type { ChainReader } from '../../src/signing/types.ts';
import { waitFor } from '../helpers/cli.ts';
import { redisForSuite } from '../helpers/redis.ts';

const OWNER = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';

/** The chain as the manager sees it: a nonces(owner) the test sets (undefined = no RPC). */
function fakeChain(initial: bigint | undefined | 'fail' = undefined) {
  const chain = { value: initial, reads: 0 };
  const reader: ChainReader = {
    async permitNonce() {
      chain.reads++;
      if (chain.value === 'fail') throw new Error('rpc down');
      return chain.value;
    },
    async permitNonceAtHead() {
      chain.reads++;
      if (chain.value === 'fail') throw new Error('rpc down');
      if (chain.value === undefined) return undefined;
      const block = {
        number: 1n,
        timestamp: BigInt(Math.floor(Date.now() / 1000)),
        hash: `0x${'00'.repeat(32)}`,
      };
      return { nonce: chain.value, block };
    },
    async usdcBalance() {
      return undefined;
    },
    async usdcBalanceAtHead() {
      return undefined;
    },
    async txBlock() {
      return undefined;
    },
  };
  return { chain, reader };
}

let suite: Awaited<ReturnType<typeof redisForSuite>>;
const connections: Redis[] = [];
const managers: RedisNonceManager[] = [];
let n = 0;

function manager(
  reader: ChainReader,
  opts: {
    leaseMs?: number;
    maxWaitMs?: number;
    chainReadMaxAgeMs?: number;
    prefix?: string;
    logger?: ReturnType<typeof createLogger>;
  } = {},
) {
  const redis = new Redis(suite.url, { maxRetriesPerRequest: 1 });
  connections.push(redis);
  const m = createNonceManager({
    redis,
    prefix: opts.prefix ?? `${suite.prefix}-${++n}`,
    chainReader: reader,
    ...(opts.leaseMs ? { leaseMs: opts.leaseMs } : {}),
    ...(opts.maxWaitMs ? { maxWaitMs: opts.maxWaitMs } : {}),
    ...(opts.chainReadMaxAgeMs !== undefined ? { chainReadMaxAgeMs: opts.chainReadMaxAgeMs } : {}),
    ...(opts.logger ? { logger: opts.logger } : {}),
  });
  managers.push(m);
  return m;
}

beforeAll(async () => {
  suite = await redisForSuite();
});
afterAll(async () => {
  for (const m of managers) await m.close();
  for (const c of connections) c.disconnect();
  await suite.close();
});

describe('nonce manager', () => {
  it('hands out 0, 1, 2 in order as permits are committed (no RPC: the pool decides)', async () => {
    const m = manager(fakeChain().reader);
    const seen: bigint[] = [];
    for (const holder of ['b/1', 'b/2', 'b/3']) {
      const lease = await m.acquire('BASE', OWNER, holder);
      seen.push(lease.nonce);
      await lease.commit();
    }
    expect(seen).toEqual([0n, 1n, 2n]);
    expect(await m.state('BASE', OWNER)).toMatchObject({ next: 3n, holder: null });
  });

  it('gives a released nonce (permit never sent, or refused) to the next holder', async () => {
    const m = manager(fakeChain().reader);
    const a = await m.acquire('ETH', OWNER, 'b/a');
    await a.release();
    const b = await m.acquire('ETH', OWNER, 'b/b');
    expect(b.nonce).toBe(a.nonce);
    await b.commit();
    expect((await m.acquire('ETH', OWNER, 'b/c')).nonce).toBe(1n);
  });

  it('lets a transfer re-run after a crash re-enter its lease with the same in-flight nonce', async () => {
    const prefix = `${suite.prefix}-reenter`;
    const { reader, chain } = fakeChain(4n);
    const first = manager(reader, { prefix });
    const lease = await first.acquire('ARB', OWNER, 'batch/t1');
    expect(lease.nonce).toBe(4n);
    await first.close(); // the worker process dies; the lease is still in Redis

    chain.value = 9n; // even if the chain moved meanwhile, the saved permit's nonce comes back
    const again = await manager(reader, { prefix }).acquire('ARB', OWNER, 'batch/t1');
    expect(again.nonce).toBe(4n);
  });

  it('makes another holder wait, and wakes it on the release, long before its next poll', async () => {
    const prefix = `${suite.prefix}-wake`;
    const { reader } = fakeChain();
    // With a 30 s poll, past this test's 20 s timeout, only the release's wake-up can bring the
    // waiter in.
    const p1 = manager(reader, { prefix, maxWaitMs: 30_000 });
    const p2 = manager(reader, { prefix, maxWaitMs: 30_000 });
    const held = await p1.acquire('POLYGON', OWNER, 'b/1');
    let got = false;
    const waiting = p2.acquire('POLYGON', OWNER, 'b/2').then((l) => {
      got = true;
      return l;
    });
    await waitFor('the second holder to wait', async () => p2.waiting('POLYGON', OWNER) === 1, {
      timeoutMs: 10_000,
      intervalMs: 20,
    });
    expect(got).toBe(false);
    await held.commit();
    const next = await waiting;
    expect(next.nonce).toBe(held.nonce + 1n);
  });

  it('counts the transfers of this process that wait for a lease, until each has it', async () => {
    const prefix = `${suite.prefix}-waiting`;
    const { reader } = fakeChain();
    const here = manager(reader, { prefix });
    const there = manager(reader, { prefix });
    const held = await here.acquire('BASE', OWNER, 'b/held');
    const mine = [here.acquire('BASE', OWNER, 'b/w1'), here.acquire('BASE', OWNER, 'b/w2')];
    const theirs = there.acquire('BASE', OWNER, 'b/w3');
    await waitFor('two waiters here, one there', async () =>
      here.waiting('BASE', OWNER) === 2 && there.waiting('BASE', OWNER) === 1 ? true : undefined,
    );
    expect(here.waiting('ETH', OWNER)).toBe(0);
    // Each gets the lease in turn, as the one before commits; then nobody waits.
    const pending = new Set([...mine, theirs]);
    await held.commit();
    while (pending.size > 0) {
      const [p, lease] = await Promise.race([...pending].map((w) => w.then((l) => [w, l] as const)));
      pending.delete(p);
      await lease.commit();
    }
    expect(here.waiting('BASE', OWNER) + there.waiting('BASE', OWNER)).toBe(0);
  });

  it('counts a waiter from the moment it asks, so that owners chosen in one turn spread over the owners', async () => {
    const prefix = `${suite.prefix}-waiting-at-once`;
    const { reader } = fakeChain();
    const m = manager(reader, { prefix });
    const held = await m.acquire('BASE', OWNER, 'b/held');
    // No await between the asks and the count: transfers whose estimates answered together choose
    // their owners in one turn (evm-owner.ts leastAwaited), each seeing the ones chosen before it.
    const asks = [m.acquire('BASE', OWNER, 'b/w1'), m.acquire('BASE', OWNER, 'b/w2')];
    expect(m.waiting('BASE', OWNER)).toBe(2);
    await held.commit();
    for (const ask of asks) await (await ask).commit();
    expect(m.waiting('BASE', OWNER)).toBe(0);
  });

  it('never hands out a nonce below its own next because the chain still shows an old value', async () => {
    const { reader, chain } = fakeChain(0n);
    const m = manager(reader);
    for (let i = 0; i < 3; i++) await (await m.acquire('BASE', OWNER, `b/${i}`)).commit();
    expect(chain.value).toBe(0n); // nothing mined yet
    expect((await m.acquire('BASE', OWNER, 'b/3')).nonce).toBe(3n);
  });

  it('starts from the chain nonce when the owner signed elsewhere', async () => {
    const { reader } = fakeChain(12n);
    const m = manager(reader);
    const lease = await m.acquire('ETH', OWNER, 'b/1');
    expect(lease.nonce).toBe(12n);
    await lease.commit();
    expect((await m.state('ETH', OWNER)).next).toBe(13n);
  });

  it('moves the lease, and the pool for every later holder, to a chain nonce past ours', async () => {
    const m = manager(fakeChain(2n).reader);
    const lease = await m.acquire('ARB', OWNER, 'b/1');
    expect(lease.nonce).toBe(2n);
    await lease.moveTo(5n); // someone used 2, 3, 4 elsewhere
    expect(lease.nonce).toBe(5n);
    expect((await m.state('ARB', OWNER)).next).toBe(5n);
    await lease.commit();
    expect((await m.acquire('ARB', OWNER, 'b/2')).nonce).toBe(6n);
  });

  it('holds the pool: others wait with the reason until the hold ends or the chain moves past where it was', async () => {
    const { reader, chain } = fakeChain(3n);
    const m = manager(reader, { chainReadMaxAgeMs: 0 });
    const lease = await m.acquire('BASE', OWNER, 'b/1');
    await lease.holdPool({ ms: 60_000, chainNonce: 3n, reason: 'b/0 may still execute' });
    expect(await m.state('BASE', OWNER)).toMatchObject({ holder: null, holdReason: 'b/0 may still execute' });
    const held = await m.acquire('BASE', OWNER, 'b/2').catch((e: unknown) => e);
    expect(held).toBeInstanceOf(NoncePoolHeldError);
    expect(held).toMatchObject({ code: 'USDC_NONCE_POOL_HELD', reason: 'b/0 may still execute' });
    expect((held as NoncePoolHeldError).retryAfterMs).toBeGreaterThan(55_000);
    chain.value = 4n; // the permit that blocked everything executed after all
    expect((await m.acquire('BASE', OWNER, 'b/2')).nonce).toBe(4n);
    expect(await m.state('BASE', OWNER)).toMatchObject({ holdUntil: null, holdReason: null });
  });

  it('ends a hold when its time is up', async () => {
    const LEASE_MS = 60_000;
    const m = manager(fakeChain().reader, { leaseMs: LEASE_MS });
    const lease = await m.acquire('ETH', OWNER, 'b/1');
    // Long enough that the refusal below comes while the hold lasts, even on a busy machine.
    await lease.holdPool({ ms: 3_000, chainNonce: 0n, reason: 'briefly' });
    await expect(m.acquire('ETH', OWNER, 'b/2')).rejects.toBeInstanceOf(NoncePoolHeldError);
    const holdUntil = (await m.state('ETH', OWNER)).holdUntil as number;
    expect(holdUntil).toBeGreaterThan(Date.now());
    // Asked again until the hold lets go: it does once its time is up, not before.
    const next = await waitFor(
      'the hold to end',
      async () => {
        try {
          return await m.acquire('ETH', OWNER, 'b/2');
        } catch (err) {
          if (err instanceof NoncePoolHeldError) return undefined;
          throw err;
        }
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    // Granted once the hold's time was up, on the pool's own clock (Redis TIME, which stamps both):
    // the lease it got runs LEASE_MS from the moment it was granted.
    const granted = ((await m.state('ETH', OWNER)).leaseUntil ?? 0) - LEASE_MS;
    expect(granted).toBeGreaterThanOrEqual(holdUntil);
    expect(next.nonce).toBe(0n);
  });

  it('records permits presumed used, and moves back below them only when none at or above the chain nonce is left', async () => {
    const m = manager(fakeChain().reader);
    await (await m.acquire('POLYGON', OWNER, 'b/a')).presumeUsed(1_000n);
    await (await m.acquire('POLYGON', OWNER, 'b/b')).presumeUsed(2_000n);
    const a = { nonce: 0n, deadline: 1_000n, holder: 'b/a' };
    const b = { nonce: 1n, deadline: 2_000n, holder: 'b/b' };
    expect(await m.doubts('POLYGON', OWNER, 0n)).toEqual([a, b]);
    expect(await m.doubts('POLYGON', OWNER, 1n)).toEqual([b]);
    expect((await m.state('POLYGON', OWNER)).next).toBe(2n);
    // The chain is at 0 past b's deadline: b never executed, but a is not settled yet.
    expect(await m.settleDoubt('POLYGON', OWNER, b, { used: false, chainNonce: 0n })).toBe(false);
    expect((await m.state('POLYGON', OWNER)).next).toBe(2n);
    expect(await m.settleDoubt('POLYGON', OWNER, a, { used: false, chainNonce: 0n })).toBe(true);
    expect(await m.state('POLYGON', OWNER)).toMatchObject({ next: 0n, doubts: [] });
  });

  it('forgets a presumed-used permit the chain shows used, keeping the pool where it is', async () => {
    const m = manager(fakeChain().reader);
    const lease = await m.acquire('ARB', OWNER, 'b/a');
    await lease.presumeUsed(1_000n);
    await m.settleDoubt('ARB', OWNER, { nonce: 0n, deadline: 1_000n, holder: 'b/a' }, { used: true });
    expect(await m.state('ARB', OWNER)).toMatchObject({ next: 1n, doubts: [] });
  });

  it('remembers who used each accepted nonce, keeping at least the last 1,000 (trimmed once every 64 nonces)', async () => {
    const prefix = `${suite.prefix}-used-${++n}`;
    const m = manager(fakeChain().reader, { prefix });
    const key = `${prefix}:nonce:ETH:${OWNER}:used`;
    const admin = new Redis(suite.url);
    connections.push(admin);
    // 1,100 older commits, as if made long ago (one nonce each, below the ones committed here).
    const old = Array.from({ length: 1_100 }, (_, i) => [String(i - 2_000), `${i - 2_000}|b/old${i}`]).flat();
    await admin.zadd(key, ...old);
    const commitAt = async (nonce: bigint, holder: string) => {
      const lease = await m.acquire('ETH', OWNER, holder);
      if (lease.nonce !== nonce) await lease.moveTo(nonce);
      await lease.commit();
    };
    await commitAt(63n, 'b/63');
    // Not a multiple of 64: nothing trimmed, and the commit is remembered.
    expect(await admin.zcard(key)).toBe(1_101);
    expect(await m.usedBy('ETH', OWNER, 63n)).toBe('b/63');
    await commitAt(64n, 'b/64');
    // A multiple of 64: trimmed back to the last 1,000, the newest kept.
    expect(await admin.zcard(key)).toBe(1_000);
    expect(await m.usedBy('ETH', OWNER, 64n)).toBe('b/64');
    expect(await m.usedBy('ETH', OWNER, 63n)).toBe('b/63');
    expect(await admin.zscore(key, '-2000|b/old0')).toBeNull();
  });

  it('shows a holder waiting for the chain after a refusal, until it lets go', async () => {
    const m = manager(fakeChain().reader);
    const lease = await m.acquire('BASE', OWNER, 'b/1');
    await lease.extend({ refusedAt: 1_700_000_000_000 });
    expect((await m.state('BASE', OWNER)).settling).toBe('0|1700000000000');
    await lease.release();
    expect((await m.state('BASE', OWNER)).settling).toBeNull();
  });

  it('uses the pool alone, with a warning, when nonces(owner) cannot be read', async () => {
    const lines: string[] = [];
    const logger = createLogger(
      'warn',
      new Writable({
        write(c: Buffer, _e, done) {
          lines.push(c.toString());
          done();
        },
      }),
    );
    const m = manager(fakeChain('fail').reader, { logger });
    const lease = await m.acquire('BASE', OWNER, 'b/1');
    expect(lease.nonce).toBe(0n);
    expect(lines.join('')).toMatch(/cannot read nonces\(owner\)/);
  });

  it('lets a dead holder’s lease expire, and the next holder gets the unconfirmed nonce', async () => {
    const prefix = `${suite.prefix}-expire`;
    const { reader } = fakeChain();
    const pool = manager(reader, { prefix, leaseMs: 300 });
    const dead = await pool.acquire('ETH', OWNER, 'b/dead');
    const deadUntil = (await pool.state('ETH', OWNER)).leaseUntil ?? Infinity;
    const next = await manager(reader, { prefix, leaseMs: 300 }).acquire('ETH', OWNER, 'b/alive');
    // Granted only once the dead holder's lease had run out, on the pool's own clock (Redis TIME,
    // which stamps both leases): the new one runs 300 ms from the moment it was granted.
    const taken = await pool.state('ETH', OWNER);
    expect(taken.holder).toBe('b/alive');
    expect((taken.leaseUntil ?? 0) - 300).toBeGreaterThanOrEqual(deadUntil);
    expect(next.nonce).toBe(dead.nonce);
    // The dead holder comes back: its lease is gone, so it may not go on signing under it…
    await expect(dead.extend()).rejects.toMatchObject({ code: 'USDC_NONCE_LEASE_LOST' });
    // …but if its permit was accepted, committing still marks the nonce used.
    await dead.commit();
    await next.release();
    expect((await manager(reader, { prefix }).acquire('ETH', OWNER, 'b/third')).nonce).toBe(dead.nonce + 1n);
  });

  it('keeps a lease alive past leaseMs with extend()', async () => {
    const prefix = `${suite.prefix}-extend`;
    const { reader } = fakeChain();
    // Extended every 200 ms, a 2 s lease lasts on a machine busy enough to delay a timer by
    // seconds; it is kept past twice its length, as observed, not after a fixed number of turns.
    const LEASE_MS = 2_000;
    const lease = await manager(reader, { prefix, leaseMs: LEASE_MS }).acquire('BASE', OWNER, 'b/slow');
    const other = manager(reader, { prefix, leaseMs: LEASE_MS });
    const ac = new AbortController();
    const waiting = other.acquire('BASE', OWNER, 'b/other', { signal: ac.signal });
    const acquiredAt = Date.now();
    while (Date.now() - acquiredAt < 2 * LEASE_MS) {
      await new Promise((r) => setTimeout(r, 200));
      await lease.extend();
    }
    ac.abort();
    await expect(waiting).rejects.toMatchObject({ code: 'USDC_NONCE_WAIT_ABORTED' });
    await lease.commit();
  });

  it('serialises many holders across four "processes": each nonce used once, never two holders at a time', async () => {
    const prefix = `${suite.prefix}-many`;
    const { reader } = fakeChain(0n);
    const procs = [0, 1, 2, 3].map(() => manager(reader, { prefix }));
    let inside = 0;
    let maxInside = 0;
    const used: bigint[] = [];
    /** A lease held for a moment, counting how many holders are inside at once. */
    const hold = async () => {
      inside++;
      maxInside = Math.max(maxInside, inside);
      await new Promise((r) => setTimeout(r, 1));
      inside--;
    };
    await Promise.all(
      procs.flatMap((m, p) =>
        Array.from({ length: 25 }, async (_, i) => {
          const lease = await m.acquire('BASE', OWNER, `batch/p${p}-${i}`);
          await hold();
          // every fifth permit is "refused on first send": its nonce goes back and is used again
          if (i % 5 === 4) {
            await lease.release();
            const retry = await m.acquire('BASE', OWNER, `batch/p${p}-${i}`);
            await hold();
            used.push(retry.nonce);
            await retry.commit();
          } else {
            used.push(lease.nonce);
            await lease.commit();
          }
        }),
      ),
    );
    expect(maxInside).toBe(1);
    expect([...used].sort((a, b) => Number(a - b))).toEqual(Array.from({ length: 100 }, (_, i) => BigInt(i)));
  });
});
