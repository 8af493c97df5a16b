import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cctpLeaseKey, releaseCctpLease, takeCctpLease } from '../../src/store/cctp-gate.ts';
import { redisForSuite } from '../helpers/redis.ts';

/**
 * The (chain, owner) CCTP lease (store/cctp-gate.ts, docs/cctp.md "The flow") on a real Redis: taken
 * by one transfer at a time, renewed by its holder (the expiry set again), refused to any other, and
 * given back only by its holder. Taking and renewing are one script (scripts/lock-take.lua), so a
 * lease that lapses between a read and a renewal is never renewed for whoever took it meanwhile.
 */
let suite: Awaited<ReturnType<typeof redisForSuite>>;
let client: Redis;
beforeAll(async () => {
  suite = await redisForSuite();
  client = new Redis(suite.url);
});
afterAll(async () => {
  client?.disconnect();
  await suite?.close();
});

describe('the CCTP lease', () => {
  const prefix = () => suite.prefix;
  const at = (holder: string) => ({ chain: 'BASE', owner: '0xAbC', holder, ttlMs: 60_000 });
  const key = () => cctpLeaseKey(prefix(), 'BASE', '0xabc');

  it('is taken by one holder, renewed by it, refused to another, and given back only by its holder', async () => {
    expect(await takeCctpLease(client, prefix(), at('b/t1'))).toBe(true);
    expect(await client.get(key())).toBe('b/t1');
    expect(await takeCctpLease(client, prefix(), at('b/t2'))).toBe(false);
    // Renewed: its holder's take sets the expiry again.
    await client.pexpire(key(), 1_000);
    expect(await takeCctpLease(client, prefix(), at('b/t1'))).toBe(true);
    expect(await client.pttl(key())).toBeGreaterThan(30_000);
    // Another's release leaves it; its holder's frees it.
    await releaseCctpLease(client, prefix(), at('b/t2'));
    expect(await client.get(key())).toBe('b/t1');
    await releaseCctpLease(client, prefix(), at('b/t1'));
    expect(await client.get(key())).toBeNull();
  });

  it('once lapsed and taken by another, its old holder neither holds it nor renews the new one', async () => {
    expect(await takeCctpLease(client, prefix(), at('b/old'))).toBe(true);
    await client.del(key()); // lapsed (its holder stalled past the lease)
    expect(await takeCctpLease(client, prefix(), at('b/new'))).toBe(true);
    await client.pexpire(key(), 5_000);
    expect(await takeCctpLease(client, prefix(), at('b/old'))).toBe(false);
    expect(await client.get(key())).toBe('b/new');
    expect(await client.pttl(key())).toBeLessThanOrEqual(5_000);
    await releaseCctpLease(client, prefix(), at('b/new'));
  });
});
