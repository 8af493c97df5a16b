import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRateLimiter } from '../../src/store/rate-limiter.ts';
import { startPrivateRedis, type TestRedis } from '../helpers/redis.ts';

/** What the limiter's script answered, seen on the connection: admissions by Redis's clock, refusals. */
type Seen = { admittedAt: number[]; refusals: number[] };

/**
 * A connection that records each take's answer: on an admission, the admission time the script
 * wrote in the log (its score, from Redis's `TIME`); on a refusal, the wait it named.
 */
function watched(redis: Redis, seen: Seen): Redis {
  const wrap =
    (call: (...args: (string | number)[]) => Promise<unknown>) =>
    async (...args: (string | number)[]): Promise<unknown> => {
      const reply = await call(...args);
      const [, , key, , , member] = args as [string, number, string, number, number, string];
      if (Number(reply) === 0) seen.admittedAt.push(Number(await redis.zscore(key, member)));
      else seen.refusals.push(Number(reply));
      return reply;
    };
  return new Proxy(redis, {
    get(target, prop, receiver) {
      if (prop === 'evalsha') return wrap(target.evalsha.bind(target) as never);
      if (prop === 'eval') return wrap(target.eval.bind(target) as never);
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
}

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
    const seen: Seen = { admittedAt: [], refusals: [] };
    const limiters = [a, b].map((redis) =>
      createRateLimiter({ redis: watched(redis, seen), prefix: 'rl1', perSecond: 8 }),
    );
    // The scenario starts 100 ms before a second boundary: a per-calendar-second counter would let 8
    // through now and 8 more right after the boundary, 16 within ~100 ms.
    // (The next such moment: 0 to 999 ms away.)
    await new Promise((r) => setTimeout(r, (1_900 - (Date.now() % 1_000)) % 1_000));
    await Promise.all(Array.from({ length: 16 }, async (_, i) => await limiters[i % 2]!.take()));

    // Observed by Redis's own clock, as the log recorded each admission: the 9th went no sooner
    // than a whole second after the 1st, and so on — never 9 within any second.
    const at = [...seen.admittedAt].sort((x, y) => x - y);
    expect(at).toHaveLength(16);
    for (let i = 8; i < at.length; i++)
      expect(at[i]! - at[i - 8]!, `admission ${i + 1}`).toBeGreaterThanOrEqual(1_000);
    // The ones over the limit were held, each told to wait until the oldest leaves the window. (How
    // soon the first eight go, on the client's clock: the bench, `BENCH_ONLY=responsiveness`.)
    expect(seen.refusals.length).toBeGreaterThanOrEqual(8);
    for (const ms of seen.refusals) expect(ms).toBeGreaterThan(0);
    for (const ms of seen.refusals) expect(ms).toBeLessThanOrEqual(1_000);
  });
});
