import { describe, expect, it } from 'vitest';
import { BATCH_ID_PATTERN, ID_PATTERN } from '../../src/domain/ids.ts';
import {
  checkScheduleSpec,
  firingBatchId,
  isFiringOf,
  SCHEDULE_NAME_PATTERN,
  scopedPayoutId,
} from '../../src/queue/schedule-identity.ts';
import { scheduledTimeOf } from '../../src/queue/schedule-runner.ts';

describe('schedules: firing identity', () => {
  it('names a firing by the UTC time it was scheduled for', () => {
    expect(firingBatchId('nightly', Date.UTC(2025, 0, 31, 2, 0, 5))).toBe('nightly-20250131T020005Z');
  });

  it('takes only names whose firings have valid batch ids (starting with a letter or digit)', () => {
    for (const name of ['nightly', '9am', 'eu_payroll-2', 'x'.repeat(40)]) {
      expect(SCHEDULE_NAME_PATTERN.test(name), name).toBe(true);
      expect(firingBatchId(name, Date.UTC(2025, 0, 31, 2))).toMatch(BATCH_ID_PATTERN);
    }
    for (const name of ['_nightly', '-nightly', '--help', 'a.b', '', 'x'.repeat(41)]) {
      expect(SCHEDULE_NAME_PATTERN.test(name), name).toBe(false);
    }
  });

  it('tells the schedule’s own firings from other batches', () => {
    expect(isFiringOf('nightly', 'nightly-20250131T020005Z')).toBe(true);
    expect(isFiringOf('nightly', 'nightly-2-20250131T020005Z')).toBe(false);
    expect(isFiringOf('nightly-2', 'nightly-20250131T020005Z')).toBe(false);
    expect(isFiringOf('nightly', 'nightly-20250131T020005Z-x')).toBe(false);
    expect(isFiringOf('nightly', 'b-0123456789abcdef')).toBe(false);
  });

  it('scopes payout ids to the firing, within the 64-character id rule, never colliding', () => {
    const a = firingBatchId('nightly', Date.UTC(2025, 0, 31, 2));
    const b = firingBatchId('nightly', Date.UTC(2025, 1, 1, 2));
    expect(scopedPayoutId(a, 'inv-1')).toBe(`${a}.inv-1`);
    expect(scopedPayoutId(a, 'inv-1')).not.toBe(scopedPayoutId(b, 'inv-1'));
    const long1 = `${'x'.repeat(60)}-1`;
    const long2 = `${'x'.repeat(60)}-2`;
    const s1 = scopedPayoutId(a, long1);
    const s2 = scopedPayoutId(a, long2);
    for (const s of [s1, s2]) expect(s).toMatch(ID_PATTERN);
    expect(s1).not.toBe(s2);
    expect(s1).not.toBe(scopedPayoutId(b, long1));
    // The same firing and row always give the same id (a re-run of a firing claims the same payout).
    expect(scopedPayoutId(a, long1)).toBe(s1);
  });

  it('reads the scheduled time from the job, not the processing time', () => {
    expect(scheduledTimeOf({ id: 'repeat:n:1738288800000', opts: { prevMillis: 1738288800000 } })).toBe(
      1738288800000,
    );
    expect(scheduledTimeOf({ id: 'repeat:n:1738288800000', opts: {} })).toBe(1738288800000);
    expect(scheduledTimeOf({ id: 'other', opts: {} })).toBeUndefined();
  });

  it('accepts cron with seconds and a time zone, and refuses bad ones with a reason', () => {
    const now = Date.UTC(2025, 0, 31, 12, 0, 0, 500);
    expect(checkScheduleSpec('* * * * * *', 'UTC', now)).toEqual({
      ok: true,
      next: Date.UTC(2025, 0, 31, 12, 0, 1),
    });
    // 02:00 in Paris in winter is 01:00 UTC.
    expect(checkScheduleSpec('0 2 * * *', 'Europe/Paris', now)).toEqual({
      ok: true,
      next: Date.UTC(2025, 1, 1, 1, 0, 0),
    });
    expect(checkScheduleSpec('61 * * * *', 'UTC', now)).toMatchObject({ ok: false });
    // Each field's own range is named, not another field's that the parser happened to check.
    const said = (cron: string) => {
      const r = checkScheduleSpec(cron, 'UTC', now);
      return r.ok ? 'accepted' : r.message;
    };
    expect(said('61 * * * *')).toMatch(/minute: 61 is out of range 0-59$/);
    expect(said('0 24 * * *')).toMatch(/hour: 24 is out of range 0-23$/);
    expect(said('0 0 32 * *')).toMatch(/day-of-month: 32 is out of range 1-31$/);
    expect(said('0 0 1 1-13 *')).toMatch(/month: 13 is out of range 1-12$/);
    expect(said('0 0 * * 1,8')).toMatch(/day-of-week: 8 is out of range 0-7$/);
    expect(said('61 0 * * * *')).toMatch(/second: 61 is out of range 0-59$/);
    // Four fields are not a cron expression here (the parser would take 61 as the hour).
    expect(said('61 * * *')).toMatch(
      /it has 4 fields; it needs 5 \(minute hour day-of-month month day-of-week\) or 6/,
    );
    expect(said('*/15 9-17 * * MON-FRI')).toBe('accepted');
    expect(said('@daily')).toBe('accepted');
    expect(checkScheduleSpec('', 'UTC', now)).toMatchObject({ ok: false });
    const tz = checkScheduleSpec('0 2 * * *', 'Mars/Olympus', now);
    expect(tz.ok).toBe(false);
    if (!tz.ok) expect(tz.message).toMatch(/time zone/);
  });
});
