import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatchConflictError } from '../../src/ingest/enqueue-batch.ts';
import { addJobsForQueuedTransfers } from '../../src/ingest/queued-jobs.ts';
import { luaScriptFile } from '../../src/store/lua-script.ts';
import { redisForSuite } from '../helpers/redis.ts';
import {
  crashingAfter,
  EVM,
  SimulatedCrashError,
  SOL,
  ingestHarness,
  jobIds,
  keysUnder,
  newPrefix,
  testConfig,
  type IngestHarness,
} from './ingest-fixtures.ts';

const HEADER = 'id,from,to,amount,recipient,memo';
const rows = (ids: number[], prefix = 'inv') =>
  ids.map(
    (i) =>
      `${prefix}-${i},${i % 3 === 0 ? 'SOLANA' : 'BASE'},${i % 3 === 0 ? 'ETH' : 'ARB'},${i}.5,${EVM[i % 4]},m${i}`,
  );
const file = (lines: string[]) => `${HEADER}\n${lines.join('\n')}\n`;

let suite: Awaited<ReturnType<typeof redisForSuite>>;
const harnesses: IngestHarness[] = [];
const harness = (prefix = newPrefix()) => {
  const h = ingestHarness(suite.url, prefix);
  harnesses.push(h);
  return h;
};
beforeAll(async () => {
  suite = await redisForSuite();
});
afterAll(async () => {
  for (const h of harnesses) await h.close();
  await suite.close();
});

describe('batch identity and idempotency', () => {
  const base = file(rows([1, 2, 3]));
  const variants: [string, string][] = [
    ['the same bytes', base],
    ['a BOM and CRLF', `\uFEFF${base.replaceAll('\n', '\r\n')}`],
    [
      'reordered columns',
      `memo,recipient,amount,to,from,id\n${[1, 2, 3].map((i) => `m${i},${EVM[i % 4]},${i}.5,${i % 3 === 0 ? 'ETH' : 'ARB'},${i % 3 === 0 ? 'SOLANA' : 'BASE'},inv-${i}`).join('\n')}\n`,
    ],
    ['lower-case chain codes', base.replaceAll('BASE', 'base').replaceAll('SOLANA', 'solana')],
  ];
  it.each(variants)('adds nothing the second time, with %s', async (_name, second) => {
    const h = harness();
    const first = await h.enqueue(base);
    expect(first).toMatchObject({ status: 'enqueued', created: true, accepted: 3 });
    const keysBefore = (await keysUnder(h.redis, h.prefix)).sort();
    const jobsBefore = await jobIds(h.redis, h.prefix);
    const again = await h.enqueue(second);
    expect(again).toMatchObject({
      status: 'enqueued',
      created: false,
      batchId: first.batchId,
      accepted: 3,
      totalAmount: 7_500_000n,
    });
    expect((await keysUnder(h.redis, h.prefix)).sort()).toEqual(keysBefore);
    expect((await jobIds(h.redis, h.prefix)).sort()).toEqual(jobsBefore.sort());
  });

  it('refuses the same --batch-id with other content as a conflict, changing nothing', async () => {
    const h = harness();
    await h.enqueue(base, { batchId: 'payroll-07' });
    const before = await h.redis.hgetall(`${h.prefix}:batch:payroll-07`);
    await expect(h.enqueue(file(rows([1, 2, 4])), { batchId: 'payroll-07' })).rejects.toBeInstanceOf(
      BatchConflictError,
    );
    expect(await h.redis.hgetall(`${h.prefix}:batch:payroll-07`)).toEqual(before);
    expect(await h.redis.exists(`${h.prefix}:payout:inv-4`)).toBe(0);
  });

  it('writes the batch record and transfer rows of the data model', async () => {
    const h = harness();
    const o = await h.enqueue(`${HEADER}\n,SOLANA,POLYGON,2.5,${EVM[1]},\np9,BASE,SOLANA,1,${SOL[0]},x\n`);
    const b = await h.redis.hgetall(`${h.prefix}:batch:${o.batchId}`);
    expect(b).toMatchObject({
      id: o.batchId,
      source: 'csv',
      rows: '2',
      amount: '3500000',
      enqueued: '1',
      held: '0',
      n_queued: '2',
      n_submitted: '0',
      complete: '0',
      generation: '0',
    });
    expect(await h.redis.hgetall(`${h.prefix}:t:${o.batchId}:line-2`)).toMatchObject({
      id: 'line-2',
      batch_id: o.batchId,
      line: '2',
      from: 'SOLANA',
      to: 'POLYGON',
      amount: '2500000',
      memo: '',
      payout: '0',
      state: 'queued',
      attempts: '0',
    });
    expect(await h.redis.zrange(`${h.prefix}:batch:${o.batchId}:rows`, 0, -1, 'WITHSCORES')).toEqual([
      'line-2',
      '2',
      'p9',
      '3',
    ]);
    expect(await h.redis.get(`${h.prefix}:payout:p9`)).toBe(o.batchId);
    expect(await h.redis.exists(`${h.prefix}:payout:line-2`)).toBe(0);
    expect((await jobIds(h.redis, h.prefix)).sort()).toEqual([`${o.batchId}/line-2`, `${o.batchId}/p9`]);
    const job = await h.redis.hgetall(`${h.prefix}:transfers-SOLANA:${o.batchId}/line-2`);
    expect(JSON.parse(job['data'] as string)).toEqual({ batchId: o.batchId, transferId: 'line-2' });
  });
});

describe('payout ids are taken once', () => {
  it('by exactly one of two concurrent enqueues of overlapping files', async () => {
    const prefix = newPrefix();
    const a = harness(prefix);
    const b = harness(prefix);
    const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);
    const [ra, rb] = await Promise.all([
      a.enqueue(file(rows(range(0, 300))), { write: { chunkSize: 25 } }),
      b.enqueue(file(rows(range(200, 500))), { write: { chunkSize: 25 } }),
    ]);
    const owners = new Map<string, string>();
    for (let i = 0; i < 500; i++) {
      const owner = await a.redis.get(`${prefix}:payout:inv-${i}`);
      if (owner) owners.set(`inv-${i}`, owner);
    }
    const winners = [ra, rb].filter((r) => r.status === 'enqueued');
    expect(winners.length).toBe(1);
    // Every claimed id belongs to a batch that was enqueued and holds its transfer; nothing else is claimed.
    for (const [id, owner] of owners) {
      expect(winners.map((w) => w.batchId)).toContain(owner);
      expect(await a.redis.hget(`${prefix}:t:${owner}:${id}`, 'state')).toBe('queued');
    }
    expect(owners.size).toBe(winners.reduce((n, w) => n + w.accepted, 0));
    for (const r of [ra, rb].filter((x) => x.status === 'rejected')) {
      expect(r.errors.some((e) => /already enqueued in batch/.test(e.message))).toBe(true);
    }
    const jobs = await jobIds(a.redis, prefix);
    expect(new Set(jobs.map((j) => j.split('/')[1])).size).toBe(jobs.length);
  });

  it('by exactly one, even when the two files list the shared ids in opposite orders', async () => {
    // Claimed in file order, A would take the shared ids from the bottom and B from the top; they
    // would meet in the middle and both be refused. Claimed in id order, one of them wins every time.
    const shared = Array.from({ length: 120 }, (_, i) => i);
    for (let round = 0; round < 5; round++) {
      const prefix = newPrefix();
      const a = harness(prefix);
      const b = harness(prefix);
      const [ra, rb] = await Promise.all([
        a.enqueue(file([...rows(shared), ...rows([1000 + round], 'a')]), { write: { chunkSize: 5 } }),
        b.enqueue(file([...rows([...shared].reverse()), ...rows([2000 + round], 'b')]), {
          write: { chunkSize: 5 },
        }),
      ]);
      expect([ra.status, rb.status].sort()).toEqual(['enqueued', 'rejected']);
      const [winner, loser] = ra.status === 'enqueued' ? [ra, rb] : [rb, ra];
      expect(winner.accepted).toBe(121);
      // The loser names the winner (it reports the shared ids the winner had claimed when it looked)
      // and holds no claim.
      const owned = loser.errors.filter((e) => /already enqueued in batch/.test(e.message));
      expect(owned.length).toBeGreaterThanOrEqual(1);
      for (const e of owned) expect(e.message).toContain(winner.batchId);
      for (const i of shared) expect(await a.redis.get(`${prefix}:payout:inv-${i}`)).toBe(winner.batchId);
      expect(await a.redis.get(`${prefix}:payout:a-${1000 + round}`)).toBe(ra === winner ? ra.batchId : null);
      expect(await a.redis.get(`${prefix}:payout:b-${2000 + round}`)).toBe(rb === winner ? rb.batchId : null);
    }
  });

  it('with --skip-invalid, both enqueue and the overlap is paid by one of them only', async () => {
    const prefix = newPrefix();
    const a = harness(prefix);
    const b = harness(prefix);
    const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);
    const [ra, rb] = await Promise.all([
      a.enqueue(file(rows(range(0, 300))), { skipInvalid: true, write: { chunkSize: 20 } }),
      b.enqueue(file(rows(range(150, 450))), { skipInvalid: true, write: { chunkSize: 20 } }),
    ]);
    expect(ra.status).toBe('enqueued');
    expect(rb.status).toBe('enqueued');
    expect(ra.accepted + rb.accepted).toBe(450);
    expect(ra.rejected + rb.rejected).toBe(150);
    const ta = await a.redis.zrange(`${prefix}:batch:${ra.batchId}:rows`, 0, -1);
    const tb = await a.redis.zrange(`${prefix}:batch:${rb.batchId}:rows`, 0, -1);
    expect(ta.filter((id) => tb.includes(id))).toEqual([]);
    expect(new Set([...ta, ...tb]).size).toBe(450);
    // The record's counters follow the rows actually kept.
    expect(await a.redis.hget(`${prefix}:batch:${rb.batchId}`, 'n_queued')).toBe(String(rb.accepted));
    expect(await a.redis.hget(`${prefix}:batch:${rb.batchId}`, 'rows')).toBe(String(tb.length));
  });
});

describe('chunks larger than one Lua call can unpack (over 8,000 values)', () => {
  const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

  it('claims, records and queues every row of a 4,500-row chunk, in line order', async () => {
    const h = harness();
    const o = await h.enqueue(file(rows(range(0, 4500))), { write: { chunkSize: 4500 } });
    expect(o).toMatchObject({ status: 'enqueued', accepted: 4500 });
    const rowsSet = await h.redis.zrange(`${h.prefix}:batch:${o.batchId}:rows`, 0, -1, 'WITHSCORES');
    const expected = range(0, 4500).flatMap((i) => [`inv-${i}`, String(i + 2)]);
    expect(rowsSet).toEqual(expected);
    expect(await h.redis.zrange(`${h.prefix}:batch:${o.batchId}:state:queued`, 0, -1, 'WITHSCORES')).toEqual(
      expected,
    );
    const owners = await h.redis.mget(range(0, 4500).map((i) => `${h.prefix}:payout:inv-${i}`));
    expect(owners.every((owner) => owner === o.batchId)).toBe(true);
    for (const i of [0, 999, 1000, 4499]) {
      expect(await h.redis.hget(`${h.prefix}:t:${o.batchId}:inv-${i}`, 'line')).toBe(String(i + 2));
    }
    expect((await jobIds(h.redis, h.prefix)).length).toBe(4500);
  });

  it('with --skip-invalid drops only the id another batch owns, in the middle of a large chunk', async () => {
    const h = harness();
    await h.redis.set(`${h.prefix}:payout:inv-1500`, 'b-other');
    const o = await h.enqueue(file(rows(range(0, 4500))), {
      skipInvalid: true,
      write: { chunkSize: 4500 },
    });
    expect(o).toMatchObject({ status: 'enqueued', accepted: 4499, rejected: 1 });
    expect(o.errors).toEqual([
      { line: 1502, column: 'id', message: 'payout id "inv-1500" was already enqueued in batch b-other' },
    ]);
    expect(await h.redis.get(`${h.prefix}:payout:inv-1500`)).toBe('b-other');
    expect(await h.redis.exists(`${h.prefix}:t:${o.batchId}:inv-1500`)).toBe(0);
    expect(await h.redis.zcard(`${h.prefix}:batch:${o.batchId}:rows`)).toBe(4499);
    expect(await h.redis.hget(`${h.prefix}:batch:${o.batchId}`, 'n_queued')).toBe('4499');
    const owners = await h.redis.mget(range(0, 4500).map((i) => `${h.prefix}:payout:inv-${i}`));
    expect(owners.filter((owner) => owner === o.batchId)).toHaveLength(4499);
  });
});

describe('a producer that dies mid-enqueue', () => {
  it('loses nothing: running the same enqueue again completes the batch without duplicates', async () => {
    const h = harness();
    const text = file(rows(Array.from({ length: 50 }, (_, i) => i + 1)));
    await expect(
      h.enqueue(text, {
        write: { chunkSize: 10, inFlight: 1 },
        // It dies as it would write its third chunk of records.
        redis: (r) => crashingAfter(r, luaScriptFile('transfers-write.lua'), 2),
      }),
    ).rejects.toBeInstanceOf(SimulatedCrashError);
    const batchId = (await h.redis.zrange(`${h.prefix}:batches`, 0, -1))[0] as string;
    expect(await h.redis.hget(`${h.prefix}:batch:${batchId}`, 'enqueued')).toBe('0');
    expect(await h.redis.zcard(`${h.prefix}:batch:${batchId}:rows`)).toBe(20);
    expect((await jobIds(h.redis, h.prefix)).length).toBe(20);
    // A worker has already finished one of the written transfers: the re-run must not reset it.
    await h.redis.hset(`${h.prefix}:t:${batchId}:inv-3`, 'state', 'submitted');

    const again = await h.enqueue(text);
    expect(again).toMatchObject({ status: 'enqueued', created: true, resumed: true, batchId, accepted: 50 });
    expect(await h.redis.hget(`${h.prefix}:batch:${batchId}`, 'enqueued')).toBe('1');
    expect(await h.redis.zcard(`${h.prefix}:batch:${batchId}:rows`)).toBe(50);
    expect(await h.redis.hget(`${h.prefix}:t:${batchId}:inv-3`, 'state')).toBe('submitted');
    const jobs = await jobIds(h.redis, h.prefix);
    expect(jobs.length).toBe(50);
    expect(new Set(jobs).size).toBe(50);
    expect(await h.enqueue(text)).toMatchObject({ created: false, accepted: 50 });
  });
});

describe('a job add that fails mid-enqueue', () => {
  it('leaves the batch not enqueued, no job before its record, and a re-run completes it', async () => {
    const h = harness();
    const text = file(rows(Array.from({ length: 50 }, (_, i) => i + 1)));
    let calls = 0;
    await expect(
      h.enqueue(text, {
        write: { chunkSize: 10, inFlight: 4 },
        // The second chunk's add fails; the first chunk's jobs are in.
        jobs: (producer) => ({
          addTransfers: (batchId, transfers, round) =>
            ++calls === 2
              ? Promise.reject(new SimulatedCrashError('simulated job add failure'))
              : producer.addTransfers(batchId, transfers, round),
        }),
      }),
    ).rejects.toBeInstanceOf(SimulatedCrashError);
    expect(calls).toBe(2);
    const batchId = (await h.redis.zrange(`${h.prefix}:batches`, 0, -1))[0] as string;
    expect(await h.redis.hget(`${h.prefix}:batch:${batchId}`, 'enqueued')).toBe('0');
    // The first chunk's ten jobs are in, each of a transfer whose record was written before it.
    const written = new Set(await h.redis.zrange(`${h.prefix}:batch:${batchId}:rows`, 0, -1));
    const jobs = await jobIds(h.redis, h.prefix);
    expect(jobs.length).toBe(10);
    expect(jobs.map((j) => j.split('/')[1]).filter((id) => !written.has(id as string))).toEqual([]);

    const again = await h.enqueue(text, { write: { chunkSize: 10, inFlight: 4 } });
    expect(again).toMatchObject({ status: 'enqueued', resumed: true, batchId, accepted: 50 });
    expect(await h.redis.hget(`${h.prefix}:batch:${batchId}`, 'enqueued')).toBe('1');
    const all = await jobIds(h.redis, h.prefix);
    expect(all.length).toBe(50);
    expect(new Set(all).size).toBe(50);
  });
});

describe('held batches, limits and likely duplicates', () => {
  it('holds a batch at the approval threshold: records written, jobs added only on release', async () => {
    const h = harness();
    const config = testConfig({ APPROVAL_THRESHOLD_USDC: '5' });
    const o = await h.enqueue(file(rows([1, 2, 3])), { config });
    expect(o).toMatchObject({ status: 'enqueued', held: true, accepted: 3 });
    expect(await h.redis.hget(`${h.prefix}:batch:${o.batchId}`, 'held')).toBe('1');
    expect(await jobIds(h.redis, h.prefix)).toEqual([]);
    const added = await addJobsForQueuedTransfers(
      { redis: h.redis, prefix: h.prefix, jobs: h.producer },
      o.batchId as string,
    );
    expect(added).toBe(3);
    expect((await jobIds(h.redis, h.prefix)).length).toBe(3);
  });

  it('refuses a batch above MAX_BATCH_USDC and writes nothing', async () => {
    const h = harness();
    const o = await h.enqueue(file(rows([1, 2, 3])), { config: testConfig({ MAX_BATCH_USDC: '7' }) });
    expect(o.status).toBe('rejected');
    expect(o.errors[0]?.message).toBe('batch total 7.50 is above MAX_BATCH_USDC (7.00)');
    expect(await keysUnder(h.redis, h.prefix)).toEqual([]);
  });

  it('with --skip-invalid enqueues the valid rows and reports the others', async () => {
    const h = harness();
    const o = await h.enqueue(
      `${HEADER}\na,ETH,BASE,1,${EVM[0]},\nb,ETH,BASE,1e2,${EVM[0]},\nc,ETH,DOGE,1,${EVM[0]},\n`,
      { skipInvalid: true },
    );
    expect(o).toMatchObject({ status: 'enqueued', accepted: 1, rejected: 2, totalAmount: 1_000_000n });
    expect(o.errors.map((e) => [e.line, e.column])).toEqual([
      [3, 'amount'],
      [4, 'to'],
    ]);
    expect(await h.redis.exists(`${h.prefix}:payout:b`)).toBe(0);
  });

  it('refuses an id-less row paying what a transfer of the last 24 h pays, unless allowed', async () => {
    const h = harness();
    const payment = `ETH,BASE,25,${EVM[2]}`;
    const first = await h.enqueue(`from,to,amount,recipient\n${payment}\n`);
    expect(first.status).toBe('enqueued');
    const second = await h.enqueue(`from,to,amount,recipient,memo\n${payment},again\n`);
    expect(second).toMatchObject({ status: 'rejected', duplicates: 1 });
    expect(second.errors[0]).toMatchObject({
      line: 2,
      column: null,
      message: expect.stringContaining(`transfer line-2 of batch ${first.batchId} (queued`),
    });
    expect(
      await h.enqueue(`from,to,amount,recipient,memo\n${payment},again\n`, { allowDuplicates: true }),
    ).toMatchObject({ status: 'enqueued', accepted: 1 });
    // A failed transfer paid nothing: paying the same again is not a duplicate of it.
    await h.redis.hset(`${h.prefix}:t:${first.batchId}:line-2`, 'state', 'failed');
    const third = await h.enqueue(`from,to,amount,recipient,memo\n${payment},third\n`);
    expect(third.status).toBe('rejected'); // still a duplicate of the allowed second batch, which is queued
    expect(third.errors[0]?.message).not.toContain(first.batchId as string);
  });

  it('reads the 24 h window across two days, and the per-fingerprint sets of earlier versions', async () => {
    const h = harness();
    const day = 24 * 3600 * 1000;
    // 01:00 UTC today: the window reaches back into yesterday (and the day sets expire after today).
    const now = Math.floor(Date.now() / day) * day + 3600 * 1000;
    const at = (ms: number) => ({ now: () => ms });
    const payment = (amount: number) => `from,to,amount,recipient,memo\nETH,BASE,${amount},${EVM[1]}`;
    // Yesterday 23:00, within 24 h: a likely duplicate; yesterday 00:30, 24.5 h before: not one.
    const recent = await h.enqueue(`${payment(31)},a\n`, at(now - 2 * 3600 * 1000));
    const old = await h.enqueue(`${payment(32)},a\n`, at(now - 24.5 * 3600 * 1000));
    expect([recent.status, old.status]).toEqual(['enqueued', 'enqueued']);
    expect(await h.enqueue(`${payment(31)},b\n`, at(now))).toMatchObject({
      status: 'rejected',
      duplicates: 1,
    });
    expect(await h.enqueue(`${payment(32)},b\n`, at(now))).toMatchObject({ status: 'enqueued', accepted: 1 });

    // A row an earlier version enqueued: its fingerprint in a set of its own (P:fp:<hash>).
    const earlier = await h.enqueue(`${payment(33)},a\n`, at(now - 3600 * 1000));
    const daySet = `${h.prefix}:fpd:${Math.floor(now / day)}`;
    const entries = await h.redis.hgetall(daySet);
    const [fp, value] = Object.entries(entries).find(([, v]) => v.includes(earlier.batchId as string)) ?? [];
    await h.redis.hdel(daySet, fp as string);
    await h.redis.zadd(`${h.prefix}:fp:${fp}`, now - 3600 * 1000, (value as string).split(':')[1] as string);
    const again = await h.enqueue(`${payment(33)},b\n`, at(now));
    expect(again).toMatchObject({ status: 'rejected', duplicates: 1 });
    expect(again.errors[0]?.message).toContain(`of batch ${earlier.batchId}`);
  });

  it('lists every transfer paying the same under its fingerprint, in order, within and across chunks and batches', async () => {
    const h = harness();
    const day = 24 * 3600 * 1000;
    // Noon of today: the day's set expires at the end of the next day (PEXPIREAT), so a fixed date
    // makes Redis drop it at once once that has passed.
    const now = Math.floor(Date.now() / day) * day + 12 * 3600 * 1000;
    const same = `ETH,BASE,7,${EVM[3]}`;
    // Rows with ids may pay the same: p1-p3 share a chunk (and a slice), p4-p5 come in the next.
    const first = await h.enqueue(
      `id,from,to,amount,recipient\n${[1, 2, 3, 4, 5].map((i) => `p${i},${same}`).join('\n')}\n`,
      {
        write: { chunkSize: 3 },
        now: () => now,
      },
    );
    const second = await h.enqueue(`id,from,to,amount,recipient\nq1,${same}\n`, { now: () => now + 1 });
    expect([first.status, second.status]).toEqual(['enqueued', 'enqueued']);
    const entries = Object.values(await h.redis.hgetall(`${h.prefix}:fpd:${Math.floor(now / day)}`));
    expect(entries).toEqual([
      [1, 2, 3, 4, 5]
        .map((i) => `${now}:${first.batchId}/p${i}`)
        .concat(`${now + 1}:${second.batchId}/q1`)
        .join(' '),
    ]);
  });

  it('stores an allowed callback_url and refuses one on another host', async () => {
    const h = harness();
    const config = testConfig({ CALLBACK_ALLOWED_HOSTS: 'hooks.example.com' });
    const o = await h.enqueue(file(rows([1])), { config, callbackUrl: 'https://hooks.example.com/done' });
    expect(await h.redis.hget(`${h.prefix}:batch:${o.batchId}`, 'callback_url')).toBe(
      'https://hooks.example.com/done',
    );
    const bad = await h.enqueue(file(rows([2])), { config, callbackUrl: 'https://evil.example.net/x' });
    expect(bad.status).toBe('rejected');
    expect(bad.errors[0]).toMatchObject({
      column: 'callback_url',
      message: expect.stringContaining('CALLBACK_ALLOWED_HOSTS'),
    });
  });
});
