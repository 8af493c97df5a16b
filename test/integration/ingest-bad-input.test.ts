import { createReadStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueueValidated } from '../../src/ingest/enqueue-batch.ts';
import { validateCsv } from '../../src/ingest/validate-input.ts';
import { createProducer } from '../../src/queue/producer.ts';
import { redisForSuite } from '../helpers/redis.ts';
import {
  EVM,
  SOL,
  ingestHarness,
  jobIds,
  keysUnder,
  newPrefix,
  testConfig,
  type IngestHarness,
} from './ingest-fixtures.ts';

const HEADER = 'id,from,to,amount,recipient,memo';
const row = (id: string, from: string, to: string, amount: string, recipient: string, memo = '') =>
  `${id},${from},${to},${amount},${recipient},${memo}`;
const good = row('p1', 'ETH', 'BASE', '10', EVM[0]);
const badChecksum = EVM[0].replace('0x2F', '0x2f');

let suite: Awaited<ReturnType<typeof redisForSuite>>;
const harnesses: IngestHarness[] = [];
const harness = () => {
  const h = ingestHarness(suite.url, newPrefix());
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

type Case = { name: string; text: string; line: number | null; column: string | null; reason: RegExp };
const rejected: Case[] = [
  { name: 'missing header', text: `${good}\n`, line: 1, column: null, reason: /missing header row/ },
  {
    name: 'unknown column',
    text: `${HEADER},fee\n${good},1\n`,
    line: 1,
    column: 'fee',
    reason: /unknown column "fee"/,
  },
  {
    name: 'missing column',
    text: `id,from,to,recipient\np1,ETH,BASE,${EVM[0]}\n`,
    line: 1,
    column: 'amount',
    reason: /missing required column "amount"/,
  },
  { name: 'empty file', text: '', line: 1, column: null, reason: /empty: a header row is required/ },
  { name: 'header only', text: `${HEADER}\r\n`, line: null, column: null, reason: /no rows/ },
  {
    name: 'more than 6 decimals',
    text: `${HEADER}\n${good}\n${row('p2', 'ETH', 'BASE', '1.0000001', EVM[1])}\n`,
    line: 3,
    column: 'amount',
    reason: /more than 6 decimals/,
  },
  {
    name: 'exponent',
    text: `${HEADER}\n${row('p2', 'ETH', 'BASE', '1e3', EVM[1])}\n`,
    line: 2,
    column: 'amount',
    reason: /not an exponent/,
  },
  {
    name: 'negative',
    text: `${HEADER}\n${row('p2', 'ETH', 'BASE', '-5', EVM[1])}\n`,
    line: 2,
    column: 'amount',
    reason: /must not have a sign/,
  },
  {
    name: 'zero',
    text: `${HEADER}\n${row('p2', 'ETH', 'BASE', '0.00', EVM[1])}\n`,
    line: 2,
    column: 'amount',
    reason: /greater than 0/,
  },
  {
    name: 'thousands separator',
    text: `${HEADER}\n${row('p2', 'ETH', 'BASE', '"1,000.00"', EVM[1])}\n`,
    line: 2,
    column: 'amount',
    reason: /thousands separators/,
  },
  {
    name: 'spaces',
    text: `${HEADER}\n${row('p2', 'ETH', 'BASE', ' 12', EVM[1])}\n`,
    line: 2,
    column: 'amount',
    reason: /spaces/,
  },
  {
    name: 'unknown chain',
    text: `${HEADER}\n${row('p2', 'DOGE', 'BASE', '1', EVM[1])}\n`,
    line: 2,
    column: 'from',
    reason: /unknown chain "DOGE"/,
  },
  {
    name: 'SOLANA → SOLANA',
    text: `${HEADER}\n${row('p2', 'SOLANA', 'solana', '1', SOL[0])}\n`,
    line: 2,
    column: 'to',
    reason: /SOLANA → SOLANA is not supported/,
  },
  {
    name: 'bad EVM checksum',
    text: `${HEADER}\n${row('p2', 'ETH', 'BASE', '1', badChecksum)}\n`,
    line: 2,
    column: 'recipient',
    reason: /invalid EIP-55 checksum/,
  },
  {
    name: 'Solana address for an EVM destination',
    text: `${HEADER}\n${row('p2', 'SOLANA', 'ARB', '1', SOL[0])}\n`,
    line: 2,
    column: 'recipient',
    reason: /is a Solana address, not an EVM address.*ARB needs an EVM address/,
  },
  {
    name: 'EVM address for a SOLANA destination',
    text: `${HEADER}\n${row('p2', 'BASE', 'SOLANA', '1', EVM[1])}\n`,
    line: 2,
    column: 'recipient',
    reason: /is an EVM address, not a Solana address.*SOLANA needs a Solana address/,
  },
  {
    name: 'duplicate id in the file',
    text: `${HEADER}\n${good}\n${row('p1', 'ETH', 'BASE', '11', EVM[1])}\n`,
    line: 3,
    column: 'id',
    reason: /duplicate id "p1" \(first on line 2\)/,
  },
  {
    name: 'an error after blank lines and a quoted multi-line memo',
    text: `${HEADER}\r\n\r\n${row('p1', 'ETH', 'BASE', '1', EVM[0], '"a,\r\nb"')}\r\n\r\n${row('p2', 'ETH', 'BASE', '1.5.0', EVM[1])}\r\n`,
    line: 6,
    column: 'amount',
    reason: /not a decimal amount/,
  },
];

describe('bad input is rejected with its line and reason, and nothing is enqueued', () => {
  it.each(rejected)('$name', async ({ text, line, column, reason }) => {
    const h = harness();
    const outcome = await h.enqueue(text);
    expect(outcome.status).toBe('rejected');
    expect(outcome.batchId).toBeNull();
    expect(outcome.accepted).toBe(0);
    const match = outcome.errors.find((e) => reason.test(e.message));
    expect(match, JSON.stringify(outcome.errors)).toBeDefined();
    expect(match).toMatchObject({ line, column });
    expect(await keysUnder(h.redis, h.prefix)).toEqual([]);
  });

  it('rejects an id already paid in an earlier batch, naming that batch, and writes nothing of the second', async () => {
    const h = harness();
    const first = await h.enqueue(`${HEADER}\n${good}\n`);
    expect(first.status).toBe('enqueued');
    const before = (await keysUnder(h.redis, h.prefix)).sort();
    const second = await h.enqueue(
      `${HEADER}\n${row('other', 'BASE', 'ARB', '3', EVM[2])}\n${row('p1', 'ETH', 'BASE', '12', EVM[1])}\n`,
    );
    expect(second.status).toBe('rejected');
    expect(second.errors).toEqual([
      { line: 3, column: 'id', message: `payout id "p1" was already enqueued in batch ${first.batchId}` },
    ]);
    expect(second.rejected).toBe(1);
    expect((await keysUnder(h.redis, h.prefix)).sort()).toEqual(before);
    expect(await h.redis.get(`${h.prefix}:payout:other`)).toBeNull();
  });
});

describe('tolerated input is accepted unchanged', () => {
  const variants: [string, string][] = [
    ['a BOM', `\uFEFF${HEADER}\n${good}\n`],
    ['CRLF line endings', `${HEADER}\r\n${good}\r\n`],
    ['blank lines', `\n${HEADER}\n\n${good}\n\n`],
    ['lower-case chain codes', `${HEADER}\n${row('p1', 'eth', 'Base', '10', EVM[0])}\n`],
    ['reordered, upper-case columns', `RECIPIENT,Amount,to,FROM,memo,id\n${EVM[0]},10,BASE,ETH,,p1\n`],
  ];
  it.each(variants)('with %s', async (_name, text) => {
    const h = harness();
    const outcome = await h.enqueue(text);
    expect(outcome).toMatchObject({
      status: 'enqueued',
      created: true,
      accepted: 1,
      totalAmount: 10_000_000n,
    });
    const t = await h.redis.hgetall(`${h.prefix}:t:${outcome.batchId}:p1`);
    expect(t).toMatchObject({
      from: 'ETH',
      to: 'BASE',
      amount: '10000000',
      recipient: EVM[0],
      state: 'queued',
      line: expect.any(String),
    });
    expect(await jobIds(h.redis, h.prefix)).toEqual([`${outcome.batchId}/p1`]);
  });

  it('keeps a quoted comma in a memo', async () => {
    const h = harness();
    const outcome = await h.enqueue(
      `${HEADER}\n${row('p1', 'ETH', 'BASE', '10', EVM[0], '"Rent, March"')}\n`,
    );
    expect(await h.redis.hget(`${h.prefix}:t:${outcome.batchId}:p1`, 'memo')).toBe('Rent, March');
  });
});

describe('a file of 100,000 rows', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'usdc-ingest-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is validated and enqueued whole: one record and one job per row', async () => {
    const file = join(dir, 'big.csv');
    const lines = [HEADER];
    const chains = ['ETH', 'BASE', 'ARB', 'POLYGON'];
    for (let i = 0; i < 100_000; i++) {
      const from = chains[i % 4] as string;
      const to = i % 10 === 0 ? 'SOLANA' : (chains[(i + 1) % 4] as string);
      lines.push(
        row(
          `pay-${i}`,
          from,
          to,
          `${(i % 500) + 1}.${String(i % 100).padStart(2, '0')}`,
          to === 'SOLANA' ? SOL[i % 2]! : EVM[i % 4]!,
        ),
      );
    }
    writeFileSync(file, `${lines.join('\n')}\n`);
    const prefix = newPrefix();
    const h = ingestHarness(suite.url, prefix);
    harnesses.push(h);
    const started = Date.now();
    const input = await validateCsv(createReadStream(file));
    expect(input.issues).toEqual([]);
    const producer = createProducer({ connection: suite.url, prefix });
    try {
      const outcome = await enqueueValidated(
        { redis: h.redis, prefix, jobs: producer, config: testConfig() },
        input,
        {
          source: 'csv',
          actor: 'cli:test',
        },
      );
      const ms = Date.now() - started;
      expect(outcome).toMatchObject({ status: 'enqueued', accepted: 100_000, rejected: 0, duplicates: 0 });
      const b = await h.redis.hgetall(`${prefix}:batch:${outcome.batchId}`);
      expect(b).toMatchObject({ rows: '100000', n_queued: '100000', enqueued: '1', complete: '0' });
      expect(await h.redis.zcard(`${prefix}:batch:${outcome.batchId}:rows`)).toBe(100_000);
      expect(await h.redis.zcard(`${prefix}:batch:${outcome.batchId}:state:queued`)).toBe(100_000);
      expect((await jobIds(h.redis, prefix)).length).toBe(100_000);
      expect(await h.redis.get(`${prefix}:payout:pay-99999`)).toBe(outcome.batchId);
      console.log(`100,000 rows validated and enqueued in ${ms} ms`);
    } finally {
      await producer.close();
    }
  }, 180_000);
});
