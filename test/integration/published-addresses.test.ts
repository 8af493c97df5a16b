import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PUBLISHED_TOGETHER_MS,
  publishAddresses,
  readPublishedAddresses,
} from '../../src/store/published-addresses.ts';
import { randomEvmAddress, randomSolanaAddress } from '../helpers/fixtures.ts';
import { redisForSuite, type SuiteRedis } from '../helpers/redis.ts';

/*
 * `P:treasury:addresses` (docs/data-model.md): what the workers last published is every address
 * published within PUBLISHED_TOGETHER_MS of the newest, on a real Redis. Times are given, not read
 * from a clock: each case names the instants it publishes at.
 */
describe('the addresses workers publish', () => {
  let suite: SuiteRedis;
  let redis: Redis;
  let n = 0;
  const prefix = () => `${suite.prefix}-${n++}`;
  const T = 1_700_000_000_000;

  beforeAll(async () => {
    suite = await redisForSuite();
    redis = new Redis(suite.url);
  });
  afterAll(async () => {
    redis?.disconnect();
    await suite?.close();
  });

  it('is empty before any worker published', async () => {
    expect(await readPublishedAddresses(redis, prefix())).toEqual({ evm: [], solana: undefined, at: null });
  });

  it('keeps a worker’s owners in its configured order, and its Solana address', async () => {
    const p = prefix();
    const [a, b, c] = [randomEvmAddress(), randomEvmAddress(), randomEvmAddress()];
    const solana = randomSolanaAddress();
    await publishAddresses(redis, p, { evm: [c, a, b], solana }, T);
    expect(await readPublishedAddresses(redis, p)).toEqual({ evm: [c, a, b], solana, at: T });
  });

  it('is the union of workers running together (one with the EVM keys, one with the Solana key)', async () => {
    const p = prefix();
    const [a, b] = [randomEvmAddress(), randomEvmAddress()];
    const solana = randomSolanaAddress();
    await publishAddresses(redis, p, { evm: [a, b], solana: undefined }, T);
    await publishAddresses(redis, p, { evm: [], solana }, T + 10_000);
    await publishAddresses(redis, p, { evm: [a, b], solana: undefined }, T + 20_000);
    expect(await readPublishedAddresses(redis, p)).toEqual({ evm: [a, b], solana, at: T + 20_000 });
  });

  it('drops a key its worker no longer holds once the workers have published without it for a while', async () => {
    const p = prefix();
    const [old, kept, added] = [randomEvmAddress(), randomEvmAddress(), randomEvmAddress()];
    await publishAddresses(redis, p, { evm: [old, kept], solana: undefined }, T);
    // Restarted with another key set: both sets are shown while the old one may still be running…
    await publishAddresses(redis, p, { evm: [kept, added], solana: undefined }, T + PUBLISHED_TOGETHER_MS);
    expect(new Set((await readPublishedAddresses(redis, p)).evm)).toEqual(new Set([old, kept, added]));
    // …and only the new one after that.
    await publishAddresses(
      redis,
      p,
      { evm: [kept, added], solana: undefined },
      T + PUBLISHED_TOGETHER_MS + 1,
    );
    expect((await readPublishedAddresses(redis, p)).evm).toEqual([kept, added]);
  });

  it('ignores members that are not well-formed, and forgets what nobody published for a day', async () => {
    const p = prefix();
    const owner = randomEvmAddress();
    await redis.zadd(`${p}:treasury:addresses`, T, 'evm:1:0x1234', T, 'solana:0xnot-base58', T, 'other');
    await publishAddresses(redis, p, { evm: [owner], solana: undefined }, T);
    expect(await readPublishedAddresses(redis, p)).toEqual({ evm: [owner], solana: undefined, at: T });
    const later = randomEvmAddress();
    await publishAddresses(redis, p, { evm: [later], solana: undefined }, T + 24 * 3600 * 1000 + 1);
    expect(await redis.zrange(`${p}:treasury:addresses`, 0, -1)).toEqual([`evm:1:${later}`]);
  });
});
