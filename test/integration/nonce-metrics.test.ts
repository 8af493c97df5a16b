import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetricsRegistry } from '../../src/metrics/metrics-registry.ts';
import { createWorkerMetrics } from '../../src/metrics/worker-metrics.ts';
import { redisForSuite } from '../helpers/redis.ts';

let suite: Awaited<ReturnType<typeof redisForSuite>>;
let redis: Redis;
beforeAll(async () => {
  suite = await redisForSuite();
  redis = new Redis(suite.url);
});
afterAll(async () => {
  redis?.disconnect();
  await suite?.close();
});

describe('nonce settle metrics, from the workers through Redis to /metrics', () => {
  it('counts nonce refusals per chain and how long refused permits waited for the chain', async () => {
    const prefix = `${suite.prefix}-nm`;
    // Two worker processes record what their pipelines saw.
    const a = createWorkerMetrics({ redis, prefix });
    const b = createWorkerMetrics({ redis, prefix });
    a.nonceSettled('BASE', 'moved', 1_800);
    b.nonceSettled('BASE', 'moved', 3_400);
    b.nonceSettled('BASE', 'final', 20_050);
    a.nonceSettled('ARB', 'held', 900);
    await Promise.all([a.close(), b.close()]);

    const text = await createMetricsRegistry({ redis, prefix, queueCounts: async () => [] }).render();
    expect(text).toContain('# TYPE usdc_batch_nonce_refusals_total counter');
    // A refusal the chain showed was not about the nonce is not counted as one.
    expect(text).toMatch(/^usdc_batch_nonce_refusals_total\{chain="BASE"\} 2$/m);
    expect(text).toMatch(/^usdc_batch_nonce_refusals_total\{chain="ARB"\} 1$/m);
    expect(text).toMatch(/^usdc_batch_nonce_refusals_total\{chain="ETH"\} 0$/m);
    expect(text).toContain('# TYPE usdc_batch_nonce_settle_wait_seconds histogram');
    expect(text).toMatch(
      /^usdc_batch_nonce_settle_wait_seconds_bucket\{chain="BASE",outcome="moved",le="2"\} 1$/m,
    );
    expect(text).toMatch(
      /^usdc_batch_nonce_settle_wait_seconds_bucket\{chain="BASE",outcome="moved",le="5"\} 2$/m,
    );
    expect(text).toMatch(/^usdc_batch_nonce_settle_wait_seconds_sum\{chain="BASE",outcome="moved"\} 5.2$/m);
    expect(text).toMatch(
      /^usdc_batch_nonce_settle_wait_seconds_bucket\{chain="BASE",outcome="final",le="20"\} 0$/m,
    );
    expect(text).toMatch(/^usdc_batch_nonce_settle_wait_seconds_count\{chain="BASE",outcome="final"\} 1$/m);
  });
});
