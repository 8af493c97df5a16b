import { describe, expect, it } from 'vitest';
import { EVM_JOBS_PER_OWNER, jobsAtOnce } from '../../src/queue/transfer-workers.ts';

describe('jobs a source chain’s worker runs at once', () => {
  it('bounds an EVM chain by what its owners can use, within WORKER_CONCURRENCY', () => {
    expect(jobsAtOnce(64, 1, 'BASE')).toBe(EVM_JOBS_PER_OWNER);
    expect(jobsAtOnce(64, 4, 'ETH')).toBe(4 * EVM_JOBS_PER_OWNER);
    expect(jobsAtOnce(16, 8, 'ARB')).toBe(16);
  });

  it('keeps one owner’s worth on an EVM chain this worker has no key for (its jobs hand themselves back)', () => {
    expect(jobsAtOnce(64, 0, 'POLYGON')).toBe(EVM_JOBS_PER_OWNER);
  });

  it('leaves Solana at WORKER_CONCURRENCY (no lease serialises its transfers)', () => {
    expect(jobsAtOnce(64, 1, 'SOLANA')).toBe(64);
  });
});
