import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRateLimiter } from '../../src/store/rate-limiter.ts';
import { startPrivateRedis, type TestRedis } from '../helpers/redis.ts';

describe('API_RATE_LIMIT limiter', () => {
  let redis: TestRedis;
  let a: Redis;
  let b: Redis;
  beforeAll(async () => {
    redis = await startPrivateRedis();
    // Two connections, as two worker processes would have.
    a = new Redis(redis.url);
    b = new Redis(redis.url);
  });
  afterAll(async () => {
    a?.disconnect();
    b?.disconnect();
    await redis?.stop();
  });

  it('lets no more than the limit through in any second, also across a calendar-second boundary', async () => {
    const limiters = [a, b].map((redis) => createRateLimiter({ redis, prefix: 'rl1', perSecond: 8 }));
    // Start 100 ms before a second boundary: a per-calendar-second counter would let 8 through
    // now and 8 more right after the boundary, 16 within ~100 ms.
    await new Promise((r) => setTimeout(r, 1_900 - (Date.now() % 1_000)));
    const started = Date.now();
    const times: number[] = [];
    await Promise.all(
      Array.from({ length: 16 }, async (_, i) => {
        await limiters[i % 2]!.take();
        times.push(Date.now() - started);
      }),
    );
    times.sort((x, y) => x - y);
    expect(times[7]!).toBeLessThan(900);
    // The 9th goes a second after the 1st, and so on. The clock is read here, after each reply: a
    // busy machine can delay one reading, so the check leaves 400 ms of slack (a per-calendar-
    // second counter lets the 9th through ~100 ms after the 1st).
    for (let i = 8; i < times.length; i++) expect(times[i]! - times[i - 8]!).toBeGreaterThan(600);
  });
});
