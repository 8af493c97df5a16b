import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetricsRegistry } from '../../src/metrics/metrics-registry.ts';
import { createWorkerMetrics, registerOwners } from '../../src/metrics/worker-metrics.ts';
import { ownerReserveKey } from '../../src/store/owner-balance.ts';
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

describe('per-owner metrics, from the workers through Redis to /metrics', () => {
  it('counts transfers and lease waits per (chain, owner) and reads the in-flight reservations of every registered owner', async () => {
    const prefix = `${suite.prefix}-om`;
    const A = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';
    const B = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
    // Two worker processes serve BASE and ARB with both owners; a third, older one registered ETH.
    await registerOwners(redis, prefix, ['BASE', 'ARB'], [A, B]);
    await registerOwners(redis, prefix, ['BASE', 'ARB'], [A, B]);
    await registerOwners(redis, prefix, ['ETH'], [A]);
    const w1 = createWorkerMetrics({ redis, prefix });
    const w2 = createWorkerMetrics({ redis, prefix });
    w1.ownerPaid?.('BASE', A);
    w2.ownerPaid?.('BASE', A.toLowerCase());
    w2.ownerPaid?.('BASE', B);
    w1.ownerLeaseWait?.('BASE', A);
    await Promise.all([w1.close(), w2.close()]);
    // Reservations as the pipeline writes them: in flight (no tx yet, tx sent, not mined), and one
    // whose payment a receipt showed mined (left for a later reading to drop: no longer in flight).
    await redis.hset(ownerReserveKey(prefix, 'BASE', A), {
      _floor: '120',
      'b1/t1': '20000000||',
      'b1/t2': `5500000|0x${'ab'.repeat(32)}|`,
      'b1/t3': `7000000|0x${'cd'.repeat(32)}|118`,
    });
    await redis.hset(ownerReserveKey(prefix, 'ARB', B), { 'b2/t1': '1000000||' });

    const text = await createMetricsRegistry({ redis, prefix, queueCounts: async () => [] }).render();
    expect(text).toContain('# TYPE usdc_batch_owner_transfers_total counter');
    expect(text).toMatch(
      new RegExp(`^usdc_batch_owner_transfers_total\\{chain="BASE",owner="${A}"\\} 2$`, 'm'),
    );
    expect(text).toMatch(
      new RegExp(`^usdc_batch_owner_transfers_total\\{chain="BASE",owner="${B}"\\} 1$`, 'm'),
    );
    // Registered owners that paid nothing yet have their series at 0; unregistered pairs none.
    expect(text).toMatch(
      new RegExp(`^usdc_batch_owner_transfers_total\\{chain="ARB",owner="${B}"\\} 0$`, 'm'),
    );
    expect(text).toMatch(
      new RegExp(`^usdc_batch_owner_transfers_total\\{chain="ETH",owner="${A}"\\} 0$`, 'm'),
    );
    expect(text).not.toMatch(new RegExp(`chain="ETH",owner="${B}"`));
    expect(text).toMatch(
      new RegExp(`^usdc_batch_owner_lease_waits_total\\{chain="BASE",owner="${A}"\\} 1$`, 'm'),
    );
    expect(text).toMatch(
      new RegExp(`^usdc_batch_owner_lease_waits_total\\{chain="BASE",owner="${B}"\\} 0$`, 'm'),
    );
    expect(text).toContain('# TYPE usdc_batch_owner_in_flight_micro_usdc gauge');
    expect(text).toMatch(
      new RegExp(`^usdc_batch_owner_in_flight_micro_usdc\\{chain="BASE",owner="${A}"\\} 25500000$`, 'm'),
    );
    expect(text).toMatch(
      new RegExp(`^usdc_batch_owner_in_flight_micro_usdc\\{chain="ARB",owner="${B}"\\} 1000000$`, 'm'),
    );
    expect(text).toMatch(
      new RegExp(`^usdc_batch_owner_in_flight_micro_usdc\\{chain="BASE",owner="${B}"\\} 0$`, 'm'),
    );

    // The reservation of a payment that landed is gone once the pipeline drops it: the gauge follows.
    await redis.hdel(ownerReserveKey(prefix, 'BASE', A), 'b1/t1', 'b1/t2');
    const after = await createMetricsRegistry({ redis, prefix, queueCounts: async () => [] }).render();
    expect(after).toMatch(
      new RegExp(`^usdc_batch_owner_in_flight_micro_usdc\\{chain="BASE",owner="${A}"\\} 0$`, 'm'),
    );
  });
});
