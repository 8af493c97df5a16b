import { describe, expect, it } from 'vitest';
import { parseJobsKept } from '../../src/config/jobs-kept.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { ConfigError } from '../../src/domain/errors.ts';
import { transferJobsKept } from '../../src/queue/producer.ts';

describe('TRANSFER_JOBS_KEPT', () => {
  it('defaults to 1d/1000 for completed jobs and 7d/100000 for failed ones, as BullMQ options', () => {
    const kept = loadConfig({}).transferJobsKept;
    expect(kept).toEqual({
      completed: { ageSeconds: 86_400, count: 1000 },
      failed: { ageSeconds: 7 * 86_400, count: 100_000 },
    });
    expect(transferJobsKept(kept)).toEqual({
      removeOnComplete: { age: 86_400, count: 1000 },
      removeOnFail: { age: 604_800, count: 100_000 },
    });
  });

  it('reads AGE/COUNT pairs with s, m, h or d', () => {
    expect(parseJobsKept('30s/10,15m/0')).toEqual({
      completed: { ageSeconds: 30, count: 10 },
      failed: { ageSeconds: 900, count: 0 },
    });
    expect(loadConfig({ TRANSFER_JOBS_KEPT: '12h/5000, 2d/200' }).transferJobsKept).toEqual({
      completed: { ageSeconds: 43_200, count: 5000 },
      failed: { ageSeconds: 172_800, count: 200 },
    });
  });

  it.each(['1d/1000', '1d,7d', '1w/10,7d/10', '0d/10,1d/10', '1d/-1,1d/1', '1d/1,1d/1,1d/1', 'lots'])(
    'refuses %j with a problem naming the setting',
    (text) => {
      let err: unknown;
      try {
        loadConfig({ TRANSFER_JOBS_KEPT: text });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toMatch(
        /TRANSFER_JOBS_KEPT.*AGE\/COUNT for completed jobs, then for failed ones/,
      );
    },
  );
});
