import { writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approveCli } from '../helpers/approve.ts';
import { createProducer } from '../../src/queue/producer.ts';
import { fireSchedule } from '../../src/queue/schedule-firing.ts';
import { isFiringOf } from '../../src/queue/schedule-identity.ts';
import { SCHEDULE_QUEUE } from '../../src/queue/schedules.ts';
import { readAudit } from '../../src/store/audit.ts';
import { runCli, waitFor } from '../helpers/cli.ts';
import { startStack, type Stack } from '../helpers/e2e.ts';
import { csvOf, randomEvmAddress, type Row } from '../helpers/fixtures.ts';

const NAME = 'every-second';
const FIRING_ID = /^every-second-(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;

/** The scheduled time a firing's batch id names. */
function firingTime(batchId: string): number {
  const m = FIRING_ID.exec(batchId);
  if (!m) throw new Error(`not a firing id: ${batchId}`);
  const [, y, mo, d, h, mi, s] = m.map(Number) as number[];
  return Date.UTC(y!, mo! - 1, d!, h!, mi!, s!);
}

type ScheduleDoc = {
  name: string;
  cron: string;
  tz: string;
  rows: number;
  total: string;
  next_run: string | null;
  created_by: string;
  last_batch: string | null;
};

describe('schedule: recurring batches through the real CLI', () => {
  let stack: Stack;
  let prefix: string;
  const rows: Row[] = [
    { id: 'rent', from: 'BASE', to: 'ARB', amount: '12.25', recipient: randomEvmAddress() },
    { id: 'payroll.line-7', from: 'ETH', to: 'POLYGON', amount: '25.50', recipient: randomEvmAddress() },
    // No id: the likely-duplicate rule must not refuse it because an earlier firing paid the same.
    { from: 'ARB', to: 'BASE', amount: '30.00', recipient: randomEvmAddress() },
  ];
  const firingBatches = async () =>
    (await stack.client.zrange(`${prefix}:batches`, 0, -1)).filter((b) => isFiringOf(NAME, b)).sort();

  beforeAll(async () => {
    stack = await startStack();
    prefix = stack.env['QUEUE_PREFIX'] as string;
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('refuses a bad cron or time zone with exit 2 and an invalid file with exit 1, naming its lines', async () => {
    const good = join(stack.dir, 'good.csv');
    writeFileSync(good, csvOf(rows));
    const badCron = await runCli(['schedule', 'add', 'x', '--cron', '61 * * * *', '--file', good], stack.env);
    expect(badCron.code).toBe(2);
    expect(badCron.stderr).toMatch(/invalid cron expression/);
    const badTz = await runCli(
      ['schedule', 'add', 'x', '--cron', '0 2 * * *', '--tz', 'Mars/Olympus', '--file', good],
      stack.env,
    );
    expect(badTz.code).toBe(2);
    expect(badTz.stderr).toMatch(/unknown time zone/);

    const bad = join(stack.dir, 'bad.csv');
    writeFileSync(
      bad,
      csvOf([
        rows[0]!,
        { id: 'b', from: 'ETH', to: 'BASE', amount: '1.2345678', recipient: randomEvmAddress() },
        { id: 'c', from: 'MOON', to: 'BASE', amount: '1', recipient: randomEvmAddress() },
      ]),
    );
    const invalid = await runCli(['schedule', 'add', 'x', '--cron', '0 2 * * *', '--file', bad], stack.env);
    expect(invalid.code).toBe(1);
    expect(invalid.stdout).toMatch(/line 3, column amount/);
    expect(invalid.stdout).toMatch(/line 4, column from/);
    const overCap = await runCli(['schedule', 'add', 'x', '--cron', '0 2 * * *', '--file', good], {
      ...stack.env,
      MAX_BATCH_USDC: '50',
    });
    expect(overCap.code).toBe(1);
    expect(overCap.stdout).toMatch(/above MAX_BATCH_USDC/);
    // Nothing of a refused schedule is stored.
    expect(await stack.client.exists(`${prefix}:schedule:x`)).toBe(0);
    expect(await stack.client.scard(`${prefix}:schedules`)).toBe(0);
  });

  it('shows a schedule in its time zone in `schedule list --json`', async () => {
    const file = join(stack.dir, 'nightly.csv');
    writeFileSync(file, csvOf(rows));
    const added = await runCli(
      ['schedule', 'add', 'nightly', '--cron', '0 2 * * *', '--tz', 'Europe/Paris', '--file', file],
      stack.env,
    );
    expect(added.code, added.stderr).toBe(0);
    const listed = await runCli(['schedule', 'list', '--json'], stack.env);
    expect(listed.code).toBe(0);
    const { schedules } = JSON.parse(listed.stdout) as { schedules: ScheduleDoc[] };
    const nightly = schedules.find((s) => s.name === 'nightly');
    expect(nightly).toMatchObject({ cron: '0 2 * * *', tz: 'Europe/Paris', rows: 3, total: '67.75' });
    expect(nightly?.created_by).toBe(`cli:${userInfo().username}`);
    // 02:00 in Paris, whatever the offset of the day.
    const paris = new Intl.DateTimeFormat('en-GB', {
      timeZone: 'Europe/Paris',
      hour: '2-digit',
      minute: '2-digit',
      hour12: false,
    }).format(new Date(nightly?.next_run as string));
    expect(paris).toBe('02:00');
    const removed = await runCli(['schedule', 'remove', 'nightly'], stack.env);
    expect(removed.code).toBe(0);
    const again = await runCli(['schedule', 'remove', 'nightly'], stack.env);
    // Not found, as a missing batch or transfer: exit 2.
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/no schedule named nightly/);
  });

  it('makes one batch per firing with two worker processes, pays each row once per firing, and stops on remove', async () => {
    const file = join(stack.dir, 'every-second.csv');
    writeFileSync(file, csvOf(rows));
    const added = await runCli(['schedule', 'add', NAME, '--cron', '* * * * * *', '--file', file], stack.env);
    expect(added.code, added.stderr).toBe(0);
    // The firings read the stored copy, not the file.
    writeFileSync(file, 'not,a,payout,file\n');

    const listed = JSON.parse((await runCli(['schedule', 'list', '--json'], stack.env)).stdout) as {
      schedules: ScheduleDoc[];
    };
    expect(listed.schedules.map((s) => s.name)).toEqual([NAME]);
    expect(listed.schedules[0]).toMatchObject({ cron: '* * * * * *', tz: 'UTC', rows: 3, total: '67.75' });
    expect(listed.schedules[0]?.next_run).not.toBeNull();

    const w1 = stack.startWorker();
    const w2 = stack.startWorker();
    await waitFor('two firings', async () => (await firingBatches()).length >= 2 || undefined, {
      timeoutMs: 30_000,
      intervalMs: 200,
    });

    // Another process (or a restart) taking the same firing again adds nothing.
    const first = (await firingBatches())[0] as string;
    const producer = createProducer({ connection: stack.client, prefix });
    try {
      const again = await fireSchedule(
        {
          redis: stack.client,
          prefix,
          jobs: producer,
          config: {
            maxTransferUsdc: undefined,
            maxDailyUsdc: undefined,
            maxBatchUsdc: undefined,
            approvalThresholdUsdc: undefined,
            newRecipientPolicy: 'allow',
            newRecipientMaxUsdc: undefined,
            approvalsRequired: 1,
            screeningOnchain: true,
            auditLogFile: undefined,
            screeningLists: [],
            screeningMaxAgeMs: 7 * 86_400_000,
            callbackAllowedHosts: [],
          },
        },
        NAME,
        firingTime(first),
      );
      expect(again).toMatchObject({ status: 'exists', batchId: first });
    } finally {
      await producer.close();
    }

    const removed = await runCli(['schedule', 'remove', NAME], stack.env);
    expect(removed.code, removed.stderr).toBe(0);
    const removedAt = Date.now();
    const afterRemove = await firingBatches();
    // Nothing can fire any more once the scheduler is gone and the firing jobs already made (one in
    // flight, one waiting) have run: observed in the schedules queue through BullMQ's API.
    const firings = new Queue(SCHEDULE_QUEUE, { connection: { url: stack.redis.url }, prefix });
    try {
      expect(await firings.getJobScheduler(NAME)).toBeUndefined();
      await waitFor(
        'the firing jobs made before the removal to have run',
        async () => {
          const c = await firings.getJobCounts('wait', 'delayed', 'active', 'prioritized');
          return Object.values(c).every((n) => n === 0);
        },
        { timeoutMs: 30_000, intervalMs: 100 },
      );
    } finally {
      await firings.close();
    }
    const batches = await firingBatches();
    expect(batches.length).toBeGreaterThanOrEqual(2);
    expect(batches.length).toBeLessThanOrEqual(afterRemove.length + 1);
    for (const b of batches) expect(firingTime(b)).toBeLessThanOrEqual(removedAt);
    expect(JSON.parse((await runCli(['schedule', 'list', '--json'], stack.env)).stdout)).toEqual({
      schedules: [],
    });

    for (const batchId of batches) {
      expect(batchId).toMatch(FIRING_ID);
      const doc = await stack.waitComplete(batchId, 30_000);
      expect(doc.source).toBe('schedule');
      expect(doc.counts).toMatchObject({ submitted: 3, failed: 0, rejected: 0, needs_review: 0 });
      expect(doc.transfers.map((t) => t.id).sort()).toEqual(
        [`${batchId}.payroll.line-7`, `${batchId}.rent`, 'line-4'].sort(),
      );
    }
    // Each row paid exactly once per firing, and every payment is one a firing's transfer recorded.
    const finalLedger = await stack.ledger();
    expect(finalLedger).toHaveLength(3 * batches.length);
    for (const r of rows) {
      expect(finalLedger.filter((e) => e.recipient.toLowerCase() === r.recipient.toLowerCase())).toHaveLength(
        batches.length,
      );
    }
    const intents = new Set(finalLedger.map((e) => e.intent_id));
    expect(intents.size).toBe(finalLedger.length);
    for (const batchId of batches) {
      const doc = await stack.status(batchId);
      for (const t of doc.transfers) expect(intents.has(t.intent_id as string)).toBe(true);
    }

    // Each firing was created once (one `enqueue` audit entry), and the schedule changes were recorded.
    const audit = await readAudit(stack.client, prefix, { limit: 10_000 });
    const enqueued = audit.filter((e) => e.action === 'enqueue' && e.who === `schedule:${NAME}`);
    expect(enqueued.map((e) => e.batch).sort()).toEqual(batches);
    const changes = audit.filter((e) => e.action === 'schedule_add' || e.action === 'schedule_remove');
    expect(changes.filter((e) => e.detail['name'] === NAME).map((e) => e.action)).toEqual([
      'schedule_remove',
      'schedule_add',
    ]);
    for (const e of changes) expect(e.who).toBe(`cli:${userInfo().username}`);

    // A firing of a removed schedule makes no batch.
    const gone = await fireSchedule(
      {
        redis: stack.client,
        prefix,
        jobs: { addTransfers: async () => {} },
        config: {
          maxTransferUsdc: undefined,
          maxDailyUsdc: undefined,
          maxBatchUsdc: undefined,
          approvalThresholdUsdc: undefined,
          newRecipientPolicy: 'allow',
          newRecipientMaxUsdc: undefined,
          approvalsRequired: 1,
          screeningOnchain: true,
          auditLogFile: undefined,
          screeningLists: [],
          screeningMaxAgeMs: 7 * 86_400_000,
          callbackAllowedHosts: [],
        },
      },
      NAME,
      Date.now(),
    );
    expect(gone.status).toBe('no_schedule');
    expect(await firingBatches()).toEqual(batches);

    await Promise.all([w1.stop(10_000), w2.stop(10_000)]);
  });

  it('holds a firing whose total reaches the approval threshold and refuses one over the batch cap', async () => {
    const file = join(stack.dir, 'limits.csv');
    // Fresh recipients: the id-less row of the other schedule's firings would be a likely duplicate here.
    writeFileSync(file, csvOf(rows.map((r) => ({ ...r, recipient: randomEvmAddress() }))));
    const added = await runCli(
      ['schedule', 'add', 'limits', '--cron', '0 2 * * *', '--file', file],
      stack.env,
    );
    expect(added.code, added.stderr).toBe(0);
    const calls: string[] = [];
    const jobs = { addTransfers: async (batchId: string) => void calls.push(batchId) };
    const base = {
      maxTransferUsdc: undefined,
      maxDailyUsdc: undefined,
      maxBatchUsdc: undefined,
      callbackAllowedHosts: [],
      newRecipientPolicy: 'allow' as const,
      newRecipientMaxUsdc: undefined,
      approvalsRequired: 1,
      screeningOnchain: true,
      auditLogFile: undefined,
      screeningLists: [],
      screeningMaxAgeMs: 7 * 86_400_000,
    };
    const at = Date.UTC(2030, 0, 1, 1, 0, 0);
    try {
      const held = await fireSchedule(
        { redis: stack.client, prefix, jobs, config: { ...base, approvalThresholdUsdc: 50_000_000n } },
        'limits',
        at,
      );
      expect(held).toMatchObject({ status: 'enqueued', batchId: 'limits-20300101T010000Z' });
      const doc = await stack.status('limits-20300101T010000Z');
      expect(doc).toMatchObject({ held: true, source: 'schedule' });
      // Held: nothing was handed to the workers.
      expect(calls).toEqual([]);

      const refused = await fireSchedule(
        {
          redis: stack.client,
          prefix,
          jobs,
          config: { ...base, approvalThresholdUsdc: undefined, maxBatchUsdc: 50_000_000n },
        },
        'limits',
        at + 86_400_000,
      );
      expect(refused.status).toBe('rejected');
      expect(await stack.client.exists(`${prefix}:batch:limits-20300102T010000Z`)).toBe(0);
      const listed = JSON.parse((await runCli(['schedule', 'list', '--json'], stack.env)).stdout) as {
        schedules: (ScheduleDoc & { last_status: string; last_error: string })[];
      };
      expect(listed.schedules[0]).toMatchObject({
        name: 'limits',
        last_batch: 'limits-20300102T010000Z',
        last_status: 'rejected',
      });
      expect(listed.schedules[0]?.last_error).toMatch(/MAX_BATCH_USDC/);
    } finally {
      expect((await runCli(['schedule', 'remove', 'limits'], stack.env)).code).toBe(0);
    }
  });
  it('holds the firing of a file that gained a new address, and later firings while one is held; approving one approves only that one', async () => {
    const known = randomEvmAddress();
    const fresh = randomEvmAddress();
    expect((await runCli(['recipients', 'add', known, '--label', 'treasury'], stack.env)).code).toBe(0);
    const file = join(stack.dir, 'book.csv');
    writeFileSync(
      file,
      csvOf([
        { id: 'known', from: 'BASE', to: 'ARB', amount: '10', recipient: known },
        { id: 'gained', from: 'ETH', to: 'BASE', amount: '11', recipient: fresh },
      ]),
    );
    const added = await runCli(['schedule', 'add', 'book', '--cron', '0 2 * * *', '--file', file], stack.env);
    expect(added.code, added.stderr).toBe(0);
    const calls: string[] = [];
    const jobs = { addTransfers: async (batchId: string) => void calls.push(batchId) };
    const config = {
      maxTransferUsdc: undefined,
      maxDailyUsdc: undefined,
      maxBatchUsdc: undefined,
      callbackAllowedHosts: [],
      approvalThresholdUsdc: undefined,
      newRecipientPolicy: 'hold' as const,
      newRecipientMaxUsdc: undefined,
      approvalsRequired: 1,
      screeningOnchain: true,
      auditLogFile: undefined,
      screeningLists: [],
      screeningMaxAgeMs: 7 * 86_400_000,
    };
    const fire = (day: number) =>
      fireSchedule({ redis: stack.client, prefix, jobs, config }, 'book', Date.UTC(2031, 0, day, 2, 0, 0));
    const held = async () =>
      (
        JSON.parse((await runCli(['schedule', 'list', '--json'], stack.env)).stdout) as {
          schedules: { name: string; held: boolean; held_firings: string[] }[];
        }
      ).schedules.find((x) => x.name === 'book');
    try {
      expect(await fire(1)).toMatchObject({ status: 'enqueued', outcome: { held: true } });
      const first = await stack.status('book-20310101T020000Z');
      expect(first.held_reason).toMatch(
        /new recipients: 1 row pays 1 address \(line 3\) not in the address book \(NEW_RECIPIENT_POLICY=hold\)/,
      );
      expect(first.transfers.map((t) => [t.id, t.new_recipient])).toEqual([
        ['book-20310101T020000Z.known', false],
        ['book-20310101T020000Z.gained', true],
      ]);
      expect(await fire(2)).toMatchObject({ outcome: { held: true } });
      expect((await stack.status('book-20310102T020000Z')).held_reason).toMatch(
        /schedule book: an earlier firing is still held \(book-20310101T020000Z\)/,
      );
      expect(await held()).toMatchObject({
        held: true,
        held_firings: ['book-20310101T020000Z', 'book-20310102T020000Z'],
      });
      expect(calls).toEqual([]);

      // Approving the second firing releases it alone, and vouches for its new address.
      expect((await approveCli('book-20310102T020000Z', stack.env)).code).toBe(0);
      expect((await stack.status('book-20310101T020000Z')).held).toBe(true);
      const book = JSON.parse((await runCli(['recipients', 'list', '--json'], stack.env)).stdout) as {
        recipients: { address: string; via: string }[];
      };
      expect(book.recipients.find((r) => r.address === fresh)?.via).toBe('approve:book-20310102T020000Z');
      expect(await held()).toMatchObject({ held_firings: ['book-20310101T020000Z'] });

      // The first is still held: the third is held for that alone (its address is known now).
      expect(await fire(3)).toMatchObject({ outcome: { held: true } });
      const third = await stack.status('book-20310103T020000Z');
      expect(third.held_reason).toMatch(
        /^schedule book: an earlier firing is still held \(book-20310101T020000Z\)$/,
      );
      expect(third.transfers.every((t) => !t.new_recipient)).toBe(true);
      expect(calls).toEqual([]);

      for (const id of ['book-20310101T020000Z', 'book-20310103T020000Z']) {
        expect((await approveCli(id, stack.env)).code).toBe(0);
      }
      expect(await held()).toMatchObject({ held: false, held_firings: [] });
      expect(await fire(4)).toMatchObject({ outcome: { held: false } });
      expect(calls).toEqual(['book-20310104T020000Z']);
    } finally {
      expect((await runCli(['schedule', 'remove', 'book'], stack.env)).code).toBe(0);
    }
  });
});
