import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { createLogger } from '../../src/log/logger.ts';
import { setPaused } from '../../src/ops/pause.ts';
import { createProducer, type Producer } from '../../src/queue/producer.ts';
import { randomEvmAddress } from '../helpers/fixtures.ts';
import { redisForSuite } from '../helpers/redis.ts';
import { newPrefix, testConfig } from './ingest-fixtures.ts';

const HOOK = 'hook-token-ui-0123456789';
const bearer = { authorization: `Bearer ${HOOK}` };
const basic = (password: string) => ({
  authorization: `Basic ${Buffer.from(`ops:${password}`).toString('base64')}`,
});

/** The batch pages' HTTP surface: credentials, read-only, HTML answers (the browser test renders them). */
describe('batch pages /ui (inject)', () => {
  let suite: Awaited<ReturnType<typeof redisForSuite>>;
  let redis: Redis;
  let producer: Producer;
  let app: FastifyInstance;
  let prefix: string;

  beforeAll(async () => {
    suite = await redisForSuite();
    redis = new Redis(suite.url);
    prefix = newPrefix();
    producer = createProducer({ connection: suite.url, prefix });
    app = await buildApp({
      config: testConfig({ HOOK_TOKEN: HOOK, QUEUE_PREFIX: prefix }),
      redis,
      producer,
      logger: createLogger('silent'),
    });
    const transfers = Array.from({ length: 5 }, (_, i) => ({
      id: `ui-${i}`,
      from: 'BASE',
      to: 'ARB',
      amount: `${i + 1}.50`,
      recipient: randomEvmAddress(),
    }));
    const res = await app.inject({
      method: 'POST',
      url: '/v1/batches',
      headers: { ...bearer, 'content-type': 'application/json' },
      payload: JSON.stringify({ batch_id: 'ui-b1', transfers }),
    });
    expect(res.statusCode, res.body).toBe(202);
  });
  afterAll(async () => {
    await app?.close();
    await producer?.close();
    redis?.disconnect();
    await suite?.close();
  });

  const PAGES = ['/ui', '/ui/batches/ui-b1', '/ui/batches/ui-b1/audit', '/ui/batches/ui-b1/export.csv'];

  it('asks a browser to log in (Basic) without the hook token, and opens with it as bearer or password', async () => {
    for (const url of PAGES) {
      for (const headers of [{}, basic(`${HOOK}x`), { authorization: `Bearer ${HOOK}x` }]) {
        const res = await app.inject({ method: 'GET', url, headers });
        expect(res.statusCode, url).toBe(401);
        expect(res.headers['www-authenticate'], url).toMatch(/^Basic realm=/);
        expect(res.body).not.toContain('ui-b1</');
      }
      for (const headers of [bearer, basic(HOOK)]) {
        expect((await app.inject({ method: 'GET', url, headers })).statusCode, url).toBe(200);
      }
    }
  });

  it("declares an empty icon on every page, so that no browser asks for /favicon.ico (a 401 without the page's credentials)", async () => {
    for (const url of ['/ui', '/ui/batches/ui-b1', '/ui/treasury']) {
      const res = await app.inject({ method: 'GET', url, headers: bearer });
      expect(res.body, url).toContain('<link rel="icon" href="data:," />');
    }
    // Every route but /healthz needs a credential: /favicon.ico too.
    expect((await app.inject({ method: 'GET', url: '/favicon.ico' })).statusCode).toBe(401);
  });

  it('answers pages as locked-down HTML: no script, no caching, no framing', async () => {
    const res = await app.inject({ method: 'GET', url: '/ui/batches/ui-b1', headers: bearer });
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['content-security-policy']).toMatch(/default-src 'none'/);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.body).toMatch(/^<!doctype html>/);
    expect(res.body).toContain('data-transfer="ui-4"');
    // Open (queued rows, no worker here): it reloads itself.
    expect(res.body).toContain('http-equiv="refresh" content="5"');
  });

  it('is read-only: only GET and HEAD are routes', async () => {
    expect((await app.inject({ method: 'HEAD', url: '/ui', headers: bearer })).statusCode).toBe(200);
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH'] as const) {
      for (const url of PAGES) {
        const res = await app.inject({ method, url, headers: bearer });
        expect(res.statusCode, `${method} ${url}`).toBe(404);
      }
    }
  });

  it('answers an unknown batch and a bad filter with a page that says so', async () => {
    const missing = await app.inject({ method: 'GET', url: '/ui/batches/no-such-batch', headers: bearer });
    expect(missing.statusCode).toBe(404);
    expect(missing.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(missing.body).toContain('batch no-such-batch does not exist');
    const bad = await app.inject({ method: 'GET', url: '/ui/batches/ui-b1?state=paid', headers: bearer });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('state must be one of');
    const badId = await app.inject({ method: 'GET', url: '/ui/batches/..', headers: bearer });
    expect(badId.statusCode).toBe(404);
  });

  it('pages the rows by line and filters them by state', async () => {
    const page = await app.inject({
      method: 'GET',
      url: '/ui/batches/ui-b1?limit=2&cursor=3',
      headers: bearer,
    });
    const rows = [...page.body.matchAll(/data-transfer="([^"]+)"/g)].map((m) => m[1]);
    // JSON rows are lines 1…5: after line 3 come ui-3 and ui-4.
    expect(rows).toEqual(['ui-3', 'ui-4']);
    expect(page.body).toContain('href="/ui/batches/ui-b1?limit=2&amp;cursor=5"');
    const failed = await app.inject({
      method: 'GET',
      url: '/ui/batches/ui-b1?state=failed',
      headers: bearer,
    });
    expect(failed.body).not.toContain('data-transfer=');
    expect(failed.body).toContain('No transfers failed');
  });

  it('serves the same export as the API', async () => {
    const ui = await app.inject({ method: 'GET', url: '/ui/batches/ui-b1/export.csv', headers: bearer });
    const api = await app.inject({ method: 'GET', url: '/v1/batches/ui-b1/export.csv', headers: bearer });
    expect(ui.body).toBe(api.body);
    expect(ui.headers['content-disposition']).toBe('attachment; filename="ui-b1.csv"');
  });

  it('says on every page, and in the status document, that processing is paused: since when and by whom', async () => {
    const pages = ['/ui', '/ui/batches/ui-b1', '/ui/batches/ui-b1/audit', '/ui/treasury'];
    for (const url of pages) {
      expect((await app.inject({ method: 'GET', url, headers: bearer })).body, url).not.toContain(
        'data-paused',
      );
    }
    const since = Date.UTC(2025, 5, 1, 12, 34, 56);
    await setPaused({ redis, prefix, actor: 'cli:alice', now: () => since }, true);
    try {
      for (const url of pages) {
        const res = await app.inject({ method: 'GET', url, headers: bearer });
        expect(res.statusCode, url).toBe(200);
        expect(res.body, url).toMatch(
          /data-paused>\s*Processing is paused since <span data-paused-since="2025-06-01T12:34:56.000Z">2025-06-01 12:34:56Z<\/span> by\s*<span class="mono" data-paused-by>cli:alice<\/span>/,
        );
      }
      const doc = (await app.inject({ method: 'GET', url: '/v1/batches/ui-b1', headers: bearer })).json() as {
        paused: unknown;
      };
      expect(doc.paused).toEqual({ since: '2025-06-01T12:34:56.000Z', by: 'cli:alice' });
    } finally {
      await setPaused({ redis, prefix, actor: 'cli:alice' }, false);
    }
    const resumed = (
      await app.inject({ method: 'GET', url: '/v1/batches/ui-b1', headers: bearer })
    ).json() as {
      paused: unknown;
    };
    expect(resumed.paused).toBeNull();
  });
});
