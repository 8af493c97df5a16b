import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { createLogger } from '../../src/log/logger.ts';
import { signatureHeader } from '../../src/queue/callbacks.ts';
import { createProducer, type Producer } from '../../src/queue/producer.ts';
import { spawnCli, type SpawnedProcess } from '../helpers/cli.ts';
import { freePort, redisForSuite } from '../helpers/redis.ts';
import { EVM, SOL, jobIds, keysUnder, newPrefix, testConfig } from './ingest-fixtures.ts';

const TOKEN = 'hook-token-0123456789abcdef';
const SECRET = 'whsec-0123456789abcdef';
const CSV = `id,from,to,amount,recipient,memo\nh1,ETH,BASE,10,${EVM[0]},a\nh2,BASE,SOLANA,2.5,${SOL[0]},b\n`;
const JSON_BODY = JSON.stringify({
  batch_id: 'hook-json-1',
  transfers: [
    { id: 'j1', from: 'ARB', to: 'ETH', amount: '3', recipient: EVM[1] },
    { from: 'SOLANA', to: 'POLYGON', amount: '1.25', recipient: EVM[2], memo: 'no id' },
  ],
  expect: { rows: 2, total: '4.25' },
});

let suite: Awaited<ReturnType<typeof redisForSuite>>;
let redis: Redis;
const opened: { app: FastifyInstance; producer: Producer }[] = [];
const logger = createLogger('silent');

async function app(env: Record<string, string> = {}, options: { bodyLimit?: number } = {}) {
  const prefix = newPrefix();
  const config = testConfig({ HOOK_TOKEN: TOKEN, QUEUE_PREFIX: prefix, ...env });
  const producer = createProducer({ connection: suite.url, prefix });
  const a = await buildApp({ config, redis, producer, logger }, options);
  opened.push({ app: a, producer });
  return { app: a, prefix };
}
const auth = { authorization: `Bearer ${TOKEN}` };

beforeAll(async () => {
  suite = await redisForSuite();
  redis = new Redis(suite.url);
});
afterAll(async () => {
  for (const o of opened) {
    await o.app.close();
    await o.producer.close();
  }
  redis.disconnect();
  await suite.close();
});

describe('POST /v1/batches (inject)', () => {
  it('answers /healthz without credentials and refuses everything else without the bearer token', async () => {
    const { app: a, prefix } = await app();
    expect((await a.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    const none = await a.inject({
      method: 'POST',
      url: '/v1/batches',
      headers: { 'content-type': 'text/csv' },
      payload: CSV,
    });
    expect(none.statusCode).toBe(401);
    expect(none.json()).toMatchObject({ statusCode: 401, code: 'USDC_HTTP_UNAUTHORIZED' });
    const wrong = await a.inject({
      method: 'POST',
      url: '/v1/batches',
      headers: { 'content-type': 'text/csv', authorization: `Bearer ${TOKEN}x` },
      payload: CSV,
    });
    expect(wrong.statusCode).toBe(401);
    expect(await keysUnder(redis, prefix)).toEqual([]);
  });

  it('accepts a CSV with 202 and the batch id, and the same CSV again adds nothing', async () => {
    const { app: a, prefix } = await app();
    const res = await a.inject({
      method: 'POST',
      url: '/v1/batches',
      headers: { ...auth, 'content-type': 'text/csv; charset=utf-8' },
      payload: CSV,
    });
    expect(res.statusCode).toBe(202);
    const body = res.json();
    expect(body).toMatchObject({ created: true, accepted: 2, rejected: 0, totals: { amount: '12.50' } });
    expect(await redis.hget(`${prefix}:batch:${body.batch_id}`, 'source')).toBe('http');
    expect((await jobIds(redis, prefix)).sort()).toEqual([`${body.batch_id}/h1`, `${body.batch_id}/h2`]);
    const again = await a.inject({
      method: 'POST',
      url: '/v1/batches',
      headers: { ...auth, 'content-type': 'text/csv' },
      payload: `\uFEFF${CSV.replaceAll('\n', '\r\n')}`,
    });
    expect(again.statusCode).toBe(202);
    expect(again.json()).toMatchObject({ batch_id: body.batch_id, created: false, accepted: 2 });
  });

  it('accepts JSON with its batch_id and control totals; answers 409 for the same id with other rows', async () => {
    const { app: a, prefix } = await app();
    const res = await a.inject({
      method: 'POST',
      url: '/v1/batches',
      headers: { ...auth, 'content-type': 'application/json' },
      payload: JSON_BODY,
    });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toMatchObject({ batch_id: 'hook-json-1', accepted: 2, rejected: 0 });
    expect(await redis.hget(`${prefix}:t:hook-json-1:line-2`, 'memo')).toBe('no id');
    const other = JSON.parse(JSON_BODY);
    other.transfers[0].amount = '4';
    delete other.expect;
    const conflict = await a.inject({
      method: 'POST',
      url: '/v1/batches',
      headers: { ...auth, 'content-type': 'application/json' },
      payload: JSON.stringify(other),
    });
    expect(conflict.statusCode).toBe(409);
    expect(conflict.json()).toMatchObject({ code: 'USDC_BATCH_CONFLICT' });
  });

  it('answers 422 with every per-row error, 400 for malformed JSON, 413 above the body limit, 415 for other types', async () => {
    const { app: a, prefix } = await app({}, { bodyLimit: 2048 });
    const bad = await a.inject({
      method: 'POST',
      url: '/v1/batches',
      headers: { ...auth, 'content-type': 'application/json' },
      payload: JSON.stringify({
        transfers: [
          { from: 'ETH', to: 'BASE', amount: '1', recipient: EVM[0] },
          { from: 'SOLANA', to: 'SOLANA', amount: '1.1234567', recipient: SOL[0] },
        ],
      }),
    });
    expect(bad.statusCode).toBe(422);
    expect(bad.json()).toMatchObject({
      code: 'USDC_INGEST_REJECTED',
      errors: [
        { line: 2, column: 'to', message: expect.stringContaining('SOLANA → SOLANA') },
        { line: 2, column: 'amount', message: expect.stringContaining('more than 6 decimals') },
      ],
    });
    const malformed = await a.inject({
      method: 'POST',
      url: '/v1/batches',
      headers: { ...auth, 'content-type': 'application/json' },
      payload: '{"transfers": [',
    });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json().code).toBe('USDC_HTTP_MALFORMED_JSON');
    const big = await a.inject({
      method: 'POST',
      url: '/v1/batches',
      headers: { ...auth, 'content-type': 'text/csv' },
      payload: `${CSV}${'#'.repeat(4096)}`,
    });
    expect(big.statusCode).toBe(413);
    const xml = await a.inject({
      method: 'POST',
      url: '/v1/batches',
      headers: { ...auth, 'content-type': 'application/xml' },
      payload: '<x/>',
    });
    expect(xml.statusCode).toBe(415);
    const callback = await a.inject({
      method: 'POST',
      url: '/v1/batches',
      headers: { ...auth, 'content-type': 'application/json' },
      payload: JSON.stringify({ ...JSON.parse(JSON_BODY), callback_url: 'https://elsewhere.example/cb' }),
    });
    expect(callback.statusCode).toBe(422);
    expect(callback.json().errors[0]).toMatchObject({ column: 'callback_url' });
    expect(await keysUnder(redis, prefix)).toEqual([]);
  });

  it('refuses batch ids that do not start with a letter or digit: 422 on POST, 404 and 400 on reads', async () => {
    const { app: a, prefix } = await app();
    for (const id of ['.', '..', '-', '--help', '_x', '-x']) {
      const query = await a.inject({
        method: 'POST',
        url: `/v1/batches?batch_id=${encodeURIComponent(id)}`,
        headers: { ...auth, 'content-type': 'text/csv' },
        payload: CSV,
      });
      expect(query.statusCode, id).toBe(422);
      expect(query.json().errors).toEqual([
        expect.objectContaining({ column: 'batch_id', message: expect.stringContaining('letter or digit') }),
      ]);
      const json = await a.inject({
        method: 'POST',
        url: '/v1/batches',
        headers: { ...auth, 'content-type': 'application/json' },
        payload: JSON.stringify({ ...JSON.parse(JSON_BODY), batch_id: id }),
      });
      expect(json.statusCode, id).toBe(422);
      const read = await a.inject({
        method: 'GET',
        url: `/v1/batches/${encodeURIComponent(id)}`,
        headers: auth,
      });
      expect(read.statusCode, id).toBe(404);
      const audit = await a.inject({
        method: 'GET',
        url: `/v1/audit?batch=${encodeURIComponent(id)}`,
        headers: auth,
      });
      expect(audit.statusCode, id).toBe(400);
    }
    expect(await keysUnder(redis, prefix)).toEqual([]);
  });

  it('with HOOK_HMAC_SECRET, needs a fresh signature over the exact body', async () => {
    const { app: a } = await app({ HOOK_HMAC_SECRET: SECRET });
    const post = (headers: Record<string, string>, payload = CSV) =>
      a.inject({
        method: 'POST',
        url: '/v1/batches',
        headers: { ...auth, 'content-type': 'text/csv', ...headers },
        payload,
      });
    expect((await post({})).statusCode).toBe(401);
    const stale = await post({ 'x-signature': signatureHeader(SECRET, CSV, Date.now() - 6 * 60_000) });
    expect(stale.statusCode).toBe(401);
    expect(stale.json().message).toContain('5-minute');
    expect((await post({ 'x-signature': signatureHeader('not-the-secret-000', CSV) })).statusCode).toBe(401);
    expect(
      (await post({ 'x-signature': signatureHeader(SECRET, CSV) }, CSV.replace('10', '11'))).statusCode,
    ).toBe(401);
    expect((await post({ 'x-signature': signatureHeader(SECRET, CSV) })).statusCode).toBe(202);
  });
});

describe('usdc-batch serve on a real port', () => {
  let server: SpawnedProcess;
  let base: string;
  let prefix: string;
  beforeAll(async () => {
    prefix = newPrefix();
    const port = await freePort();
    server = spawnCli(['serve'], {
      REDIS_URL: suite.url,
      QUEUE_PREFIX: prefix,
      HTTP_PORT: String(port),
      HOOK_TOKEN: TOKEN,
      HOOK_HMAC_SECRET: SECRET,
    });
    base = `http://127.0.0.1:${port}`;
    // Generous: a busy machine can take many seconds to start serve; an exit ends the wait at once.
    const deadline = Date.now() + 50_000;
    for (;;) {
      if (server.child.exitCode !== null) throw new Error(`serve exited: ${server.output()}`);
      try {
        if ((await fetch(`${base}/healthz`)).ok) break;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`serve did not start: ${server.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  });
  afterAll(async () => {
    await server?.stop();
  });

  const post = (body: string, type: string, headers: Record<string, string>) =>
    fetch(`${base}/v1/batches`, { method: 'POST', headers: { 'content-type': type, ...headers }, body });

  it('takes CSV and JSON with the token and a signature, and refuses them without', async () => {
    expect((await post(CSV, 'text/csv', {})).status).toBe(401);
    expect((await post(CSV, 'text/csv', auth)).status).toBe(401);
    expect((await post(CSV, 'text/csv', { 'x-signature': signatureHeader(SECRET, CSV) })).status).toBe(401);

    const csv = await post(CSV, 'text/csv', { ...auth, 'x-signature': signatureHeader(SECRET, CSV) });
    expect(csv.status).toBe(202);
    const csvBody = (await csv.json()) as { batch_id: string; accepted: number; rejected: number };
    expect(csvBody).toMatchObject({ accepted: 2, rejected: 0 });

    const json = await post(JSON_BODY, 'application/json', {
      ...auth,
      'x-signature': signatureHeader(SECRET, JSON_BODY),
    });
    expect(json.status).toBe(202);
    expect(await json.json()).toMatchObject({ batch_id: 'hook-json-1', accepted: 2, rejected: 0 });

    expect(await redis.zrange(`${prefix}:batches`, 0, -1)).toEqual(
      expect.arrayContaining([csvBody.batch_id, 'hook-json-1']),
    );
    expect((await jobIds(redis, prefix)).length).toBe(4);
  });
});
