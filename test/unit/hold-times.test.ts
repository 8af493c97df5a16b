import { describe, expect, it } from 'vitest';
import { DEFAULT_HOLD_TIMES, holdTimesOf, workerLockProblem } from '../../src/domain/hold-times.ts';

describe('hold times (WORKER_LOCK_MS)', () => {
  it('keeps the long-standing defaults at 30 s: job and processing locks 30 s, nonce lease 60 s, CCTP lease 120 s', () => {
    expect(DEFAULT_HOLD_TIMES).toEqual({
      jobLockMs: 30_000,
      stalledIntervalMs: 15_000,
      transferLockMs: 30_000,
      transferLockRenewMs: 10_000,
      nonceLeaseMs: 60_000,
      nonceLeaseExtendMs: 10_000,
      cctpLeaseMs: 120_000,
      followClaimMs: 60_000,
      sweepQuietMs: 60_000,
      sweepEveryMs: 30_000,
    });
  });

  it('renews every hold well within its life, whatever the setting', () => {
    for (const ms of [1_000, 10_000, 30_000, 600_000]) {
      const h = holdTimesOf(ms);
      expect(h.stalledIntervalMs).toBeLessThan(h.jobLockMs);
      expect(h.transferLockRenewMs * 2).toBeLessThan(h.transferLockMs);
      expect(h.nonceLeaseExtendMs * 2).toBeLessThan(h.nonceLeaseMs);
      // The sweeper acts only once a stalled job would have come back on its own.
      expect(h.sweepQuietMs).toBeGreaterThan(h.jobLockMs + h.stalledIntervalMs);
    }
  });

  it('refuses a lock whose nonce lease would not outlast one service call after its extension interval', () => {
    const service = { connectTimeoutMs: 3_000, responseTimeoutMs: 10_000 };
    expect(workerLockProblem(30_000, service)).toBeUndefined();
    expect(workerLockProblem(10_000, service)).toBeUndefined();
    expect(workerLockProblem(8_000, service)).toMatch(/nonce lease \(twice it, 16000 ms\)/);
    expect(workerLockProblem(8_000, { connectTimeoutMs: 1_000, responseTimeoutMs: 5_000 })).toBeUndefined();
  });
});
