import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance, HTTPMethods } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { accessFileEntry, ROLES, tokenDigest, type Role } from '../../src/domain/access.ts';
import { buildApp } from '../../src/http/app.ts';
import { mayUse, ROLES_FOR, ROUTE_TABLE } from '../../src/http/route-table.ts';
import type { RoutePlugin } from '../../src/http/route-deps.ts';
import { createLogger } from '../../src/log/logger.ts';
import { createProducer, type Producer } from '../../src/queue/producer.ts';
import { runCli, waitFor } from '../helpers/cli.ts';
import { randomEvmAddress } from '../helpers/fixtures.ts';
import { redisForSuite } from '../helpers/redis.ts';
import { startServe } from '../helpers/serve.ts';
import { newPrefix, testConfig } from './ingest-fixtures.ts';

const logger = createLogger('silent');
const dir = mkdtempSync(join(tmpdir(), 'usdc-access-'));

/** One credential per role, named after it. */
const TOKENS: Record<Role, string> = {
  metrics: 'token-of-the-metrics-role-0123',
  viewer: 'token-of-the-viewer-role-01234',
  submitter: 'token-of-the-submitter-role-01',
  operator: 'token-of-the-operator-role-012',
  approver: 'token-of-the-approver-role-012',
};

function accessFile(entries: readonly { name: string; roles: Role[]; token: string }[]): string {
  const file = join(dir, `access-${Math.random().toString(36).slice(2)}.yaml`);
  const lines = entries.map((e) =>
    accessFileEntry({ name: e.name, roles: e.roles, sha256: tokenDigest(e.token) }),
  );
  writeFileSync(file, `credentials:\n${lines.join('\n')}\n`);
  return file;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** A concrete path for a registered route: its parameters filled with values that exist. */
function concrete(url: string, batchId: string, address: string): string {
  return url
    .replace(':id', batchId)
    .replace(':address', address)
    .replace(':queueName', 'transfers-BASE')
    .replace(/:[A-Za-z]+/g, 'x')
    .replace('*', 'x');
}

describe('access: named credentials and roles (docs/access.md)', () => {
  let suite: Awaited<ReturnType<typeof redisForSuite>>;
  let redis: Redis;
  const opened: { app: FastifyInstance; producer: Producer }[] = [];

  async function appWith(env: Record<string, string>, options: { extraRoutes?: RoutePlugin[] } = {}) {
    const prefix = newPrefix();
    const config = loadConfig(
      { QUEUE_PREFIX: prefix, HTTP_AUTH_FAILURE_LIMIT: '0', ...env },
      { access: true },
    );
    const producer = createProducer({ connection: suite.url, prefix });
    const app = await buildApp({ config, redis, producer, logger }, options);
    opened.push({ app, producer });
    return app;
  }

  async function postBatch(app: FastifyInstance, token: string, batchId: string, amount = '10') {
    return await app.inject({
      method: 'POST',
      url: '/v1/batches',
      headers: { ...bearer(token), 'content-type': 'application/json' },
      payload: JSON.stringify({
        batch_id: batchId,
        transfers: [{ id: `${batchId}-0`, from: 'BASE', to: 'ARB', amount, recipient: randomEvmAddress() }],
      }),
    });
  }

  beforeAll(async () => {
    suite = await redisForSuite();
    redis = new Redis(suite.url);
  });
  afterAll(async () => {
    for (const o of opened) {
      await o.app.close();
      await o.producer.close();
    }
    redis?.disconnect();
    await suite?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('checks every registered route against every role, as the route table says, before the route runs', async () => {
    const file = accessFile(
      ROLES.map((role) => ({ name: `only-${role}`, roles: [role], token: TOKENS[role] })),
    );
    const app = await appWith({ ACCESS_FILE: file });
    expect((await postBatch(app, TOKENS.submitter, 'mx-1')).statusCode).toBe(202);
    const address = randomEvmAddress();

    const routes = app.registeredRoutes.filter((r) => r.method !== 'HEAD');
    // Every route of the table is registered, and every registered route has its entry.
    for (const entry of ROUTE_TABLE.filter((e) => !e.prefix)) {
      expect(app.hasRoute({ method: entry.method as HTTPMethods, url: entry.url }), entry.url).toBe(true);
    }
    expect(routes.length).toBeGreaterThan(ROUTE_TABLE.length);
    let checked = 0;
    for (const route of routes) {
      const url = concrete(route.url, 'mx-1', address);
      const send = (headers: Record<string, string>) =>
        app.inject({
          method: route.method as HTTPMethods,
          url,
          headers: route.method === 'GET' ? headers : { ...headers, 'content-type': 'application/json' },
          ...(route.method === 'GET' ? {} : { payload: '{}' }),
        });
      const anonymous = await send({});
      if (route.rule.access === 'public') {
        expect([401, 403], `${route.method} ${route.url} is public`).not.toContain(anonymous.statusCode);
        continue;
      }
      expect(anonymous.statusCode, `${route.method} ${url} without a credential`).toBe(401);
      for (const role of ROLES) {
        const res = await send(bearer(TOKENS[role]));
        const what = `${route.method} ${url} as ${role}`;
        checked++;
        if (mayUse([role], route.rule.access)) {
          expect([401, 403], what).not.toContain(res.statusCode);
        } else {
          expect(res.statusCode, what).toBe(403);
          expect(res.json(), what).toMatchObject({
            code: 'USDC_HTTP_FORBIDDEN',
            roles: [...ROLES_FOR[route.rule.access]],
            message: expect.stringContaining(ROLES_FOR[route.rule.access].join(', ')),
          });
        }
      }
    }
    expect(checked).toBeGreaterThan(100);
  });

  it('will not build an app with a route the table does not know: no route goes unprotected', async () => {
    const unlisted: RoutePlugin = async (app) => {
      app.get('/v1/unlisted', async () => ({ secret: true }));
    };
    await expect(
      appWith({ HOOK_TOKEN: 'hook-token-access-0123456789' }, { extraRoutes: [unlisted] }),
    ).rejects.toThrow(/GET \/v1\/unlisted has no entry in the route table/);
  });

  it('gives the metrics credential /metrics and /readyz only: POST /v1/batches and retry are 403 naming the role', async () => {
    // Finding 1 of issue 33: the scrape credential was the payout credential.
    const METRICS = 'metrics-token-access-0123456789';
    const HOOK = 'hook-token-access-0123456789';
    const app = await appWith({ METRICS_TOKEN: METRICS, HOOK_TOKEN: HOOK });
    expect((await app.inject({ method: 'GET', url: '/metrics', headers: bearer(METRICS) })).statusCode).toBe(
      200,
    );
    expect((await app.inject({ method: 'GET', url: '/readyz', headers: bearer(METRICS) })).statusCode).toBe(
      200,
    );
    const post = await postBatch(app, METRICS, 'mt-1');
    expect(post.statusCode).toBe(403);
    expect(post.json()).toEqual({
      statusCode: 403,
      code: 'USDC_HTTP_FORBIDDEN',
      error: 'Forbidden',
      message: 'this route needs the role submitter; the credential "metrics" has metrics',
      roles: ['submitter'],
    });
    expect((await postBatch(app, HOOK, 'mt-1')).statusCode).toBe(202);
    const retry = await app.inject({
      method: 'POST',
      url: '/v1/batches/mt-1/retry',
      headers: bearer(METRICS),
    });
    expect(retry.statusCode).toBe(403);
    expect(retry.json()).toMatchObject({ roles: ['operator'] });
    expect(
      (await app.inject({ method: 'GET', url: '/v1/batches/mt-1', headers: bearer(METRICS) })).statusCode,
    ).toBe(403);
  });

  it('lets an approver read what it approves: the status document, the pages (Basic login too), the book', async () => {
    // Finding 3 of issue 33: the approver token got 401 on every read.
    const HOOK = 'hook-token-access-0123456789';
    const APPROVER = 'approver-token-access-0123456';
    const app = await appWith({ HOOK_TOKEN: HOOK, APPROVER_TOKEN: APPROVER, APPROVAL_THRESHOLD_USDC: '1' });
    expect((await postBatch(app, HOOK, 'ap-1')).json()).toMatchObject({ held: true });
    for (const url of [
      '/v1/batches/ap-1',
      '/v1/batches',
      '/v1/recipients',
      '/v1/audit',
      '/ui',
      '/ui/batches/ap-1',
    ]) {
      expect((await app.inject({ method: 'GET', url, headers: bearer(APPROVER) })).statusCode, url).toBe(200);
    }
    const basic = `Basic ${Buffer.from(`alice:${APPROVER}`).toString('base64')}`;
    const page = await app.inject({
      method: 'GET',
      url: '/ui/batches/ap-1',
      headers: { authorization: basic },
    });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('ap-1-0');
    // Basic login is for the pages only.
    expect(
      (await app.inject({ method: 'GET', url: '/v1/batches/ap-1', headers: { authorization: basic } }))
        .statusCode,
    ).toBe(401);
    // …and it may not submit, retry or cancel.
    expect((await postBatch(app, APPROVER, 'ap-2')).statusCode).toBe(403);
    const cancel = await app.inject({
      method: 'POST',
      url: '/v1/batches/ap-1/cancel',
      headers: bearer(APPROVER),
    });
    expect(cancel.statusCode).toBe(403);
  });

  it('keeps the address book from the hook credential: only an approver adds to it', async () => {
    // Finding 4 of issue 33: with NEW_RECIPIENT_MAX_USDC and no approver, the hook token added an
    // address (201) and the next 500 USDC to it was not held. An approver is now required at start
    // (config.test.ts), and the hook credential may not change the book.
    const HOOK = 'hook-token-access-0123456789';
    const APPROVER = 'approver-token-access-0123456';
    const app = await appWith({ HOOK_TOKEN: HOOK, APPROVER_TOKEN: APPROVER, NEW_RECIPIENT_MAX_USDC: '100' });
    const address = randomEvmAddress();
    const add = (token: string) =>
      app.inject({
        method: 'POST',
        url: '/v1/recipients',
        headers: { ...bearer(token), 'content-type': 'application/json' },
        payload: JSON.stringify({ address, label: 'attacker' }),
      });
    const byHook = await add(HOOK);
    expect(byHook.statusCode).toBe(403);
    expect(byHook.json()).toMatchObject({ roles: ['approver'] });
    const listed = await app.inject({ method: 'GET', url: '/v1/recipients', headers: bearer(HOOK) });
    expect((listed.json() as { recipients: unknown[] }).recipients).toEqual([]);
    const post = await app.inject({
      method: 'POST',
      url: '/v1/batches',
      headers: { ...bearer(HOOK), 'content-type': 'application/json' },
      payload: JSON.stringify({
        batch_id: 'book-1',
        transfers: [{ id: 'book-1-0', from: 'BASE', to: 'ARB', amount: '500', recipient: address }],
      }),
    });
    expect(post.json()).toMatchObject({ held: true });
    const byApprover = await add(APPROVER);
    expect(byApprover.statusCode).toBe(201);
    const audit = await app.inject({ method: 'GET', url: '/v1/audit', headers: bearer(HOOK) });
    const entries = (audit.json() as { entries: { action: string; who: string }[] }).entries;
    expect(entries.find((e) => e.action === 'recipient_add')?.who).toBe('approver');
    expect(entries.find((e) => e.action === 'enqueue')?.who).toBe('hook');
  });

  it('serves with the credentials `access token` makes, and re-reads ACCESS_FILE on SIGHUP (a bad file changes nothing)', async () => {
    const made = await runCli(['access', 'token', 'alice', '--role', 'approver', '--role', 'viewer'], {});
    expect(made.code, made.stderr).toBe(0);
    const [token, entry] = made.stdout.split('\n') as [string, string];
    expect(token).toMatch(/^ubt_[A-Za-z0-9_-]{43}$/);
    expect(entry).toMatch(
      new RegExp(`^  - \\{ name: alice, roles: \\[approver, viewer\\], sha256: ${tokenDigest(token)} \\}`),
    );
    const json = await runCli(['access', 'token', 'grafana', '--role', 'metrics', '--json'], {});
    const doc = JSON.parse(json.stdout) as { token: string; sha256: string; entry: string; roles: string[] };
    expect(doc.sha256).toBe(tokenDigest(doc.token));
    expect(doc.roles).toEqual(['metrics']);
    expect((await runCli(['access', 'token', 'bob', '--role', 'admin'], {})).code).toBe(2);
    expect((await runCli(['access', 'token', 'Bob', '--role', 'viewer'], {})).code).toBe(2);

    const file = join(dir, 'served.yaml');
    writeFileSync(file, `credentials:\n${entry}\n`);
    const api = await startServe({
      REDIS_URL: suite.url,
      QUEUE_PREFIX: newPrefix(),
      ACCESS_FILE: file,
      LOG_LEVEL: 'info',
    });
    try {
      expect((await api.call('/v1/batches', { token })).status).toBe(200);
      expect((await api.call('/metrics', { token: doc.token })).status).toBe(401);
      writeFileSync(file, `credentials:\n${entry}\n  ${doc.entry}\n`);
      api.process.child.kill('SIGHUP');
      await waitFor(
        'the reloaded credential',
        async () => (await api.call('/metrics', { token: doc.token })).status === 200,
      );
      expect((await api.call('/v1/batches', { token: doc.token })).status).toBe(403);

      writeFileSync(
        file,
        `credentials:\n  - { name: alice, roles: [superuser], sha256: ${tokenDigest(token)} }\n`,
      );
      api.process.child.kill('SIGHUP');
      await waitFor('the refused reload', async () =>
        api.process.output().includes('ACCESS_FILE not reloaded'),
      );
      expect(api.process.output()).toContain('unknown role \\"superuser\\"');
      expect((await api.call('/metrics', { token: doc.token })).status).toBe(200);
      expect((await api.call('/v1/batches', { token })).status).toBe(200);
      expect(api.process.output()).not.toContain(token);
    } finally {
      await api.stop();
    }
  });

  it('refuses to serve with an ACCESS_FILE problem or with the tokens beside it, naming them', async () => {
    const file = accessFile([{ name: 'x', roles: ['viewer'], token: TOKENS.viewer }]);
    const both = await runCli(['serve'], { ACCESS_FILE: file, HOOK_TOKEN: 'hook-token-access-0123456789' });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('HOOK_TOKEN: must be unset when ACCESS_FILE is set');
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, `credentials:\n  - { name: x, roles: [viewer], sha256: nothex }\n`);
    const refused = await runCli(['serve'], { ACCESS_FILE: bad });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('ACCESS_FILE: credentials[0] (x): sha256 must be 64 hex digits');
  });

  it('counts failures per client address, behind HTTP_TRUSTED_PROXIES by X-Forwarded-For, and never refuses a valid credential', async () => {
    const HOOK = 'hook-token-access-0123456789';
    const env = { HOOK_TOKEN: HOOK, HTTP_AUTH_FAILURE_LIMIT: '3' };
    const send = (
      app: FastifyInstance,
      remoteAddress: string,
      token: string | undefined,
      forwarded?: string,
    ) =>
      app.inject({
        method: 'GET',
        url: '/v1/batches',
        remoteAddress,
        headers: {
          ...(token ? bearer(token) : {}),
          ...(forwarded ? { 'x-forwarded-for': forwarded } : {}),
        },
      });
    // Behind a proxy every client shares its address: the proxy's X-Forwarded-For names each one.
    const proxied = await appWith({ ...env, HTTP_TRUSTED_PROXIES: '10.0.0.0/8,::1' });
    for (let i = 0; i < 3; i++) {
      expect((await send(proxied, '10.1.2.3', 'wrong-token-0123456789', '203.0.113.7')).statusCode).toBe(401);
    }
    expect((await send(proxied, '10.1.2.3', 'wrong-token-0123456789', '203.0.113.7')).statusCode).toBe(429);
    expect((await send(proxied, '10.1.2.3', undefined, '198.51.100.1, 203.0.113.7')).statusCode).toBe(429);
    // Another client behind the same proxy is not locked out, nor the right token from the blocked one.
    expect((await send(proxied, '10.1.2.3', 'wrong-token-0123456789', '203.0.113.8')).statusCode).toBe(401);
    expect((await send(proxied, '10.1.2.3', HOOK, '203.0.113.7')).statusCode).toBe(200);
    // A connection from elsewhere cannot choose its address by the header.
    const direct = await appWith(env);
    for (let i = 0; i < 3; i++) {
      expect((await send(direct, '192.0.2.9', 'wrong-token-0123456789', `203.0.113.${i}`)).statusCode).toBe(
        401,
      );
    }
    expect((await send(direct, '192.0.2.9', 'wrong-token-0123456789', '203.0.113.99')).statusCode).toBe(429);
    expect((await send(direct, '192.0.2.9', HOOK)).statusCode).toBe(200);
    expect(() => loadConfig({ HTTP_TRUSTED_PROXIES: '10.0.0.0/33,proxy.example' })).toThrow(
      /HTTP_TRUSTED_PROXIES: "10\.0\.0\.0\/33" is not an IP address[\s\S]*HTTP_TRUSTED_PROXIES: "proxy\.example"/,
    );
  });

  it('answers 401 the same for a wrong token and none, and 404 only to a credential', async () => {
    const app = await appWith({ METRICS_TOKEN: TOKENS.metrics });
    const none = await app.inject({ method: 'GET', url: '/no-such-route' });
    const wrong = await app.inject({
      method: 'GET',
      url: '/no-such-route',
      headers: bearer(`${TOKENS.metrics}x`),
    });
    expect([none.statusCode, wrong.statusCode]).toEqual([401, 401]);
    expect(none.body).toBe(wrong.body);
    const known = await app.inject({ method: 'GET', url: '/no-such-route', headers: bearer(TOKENS.metrics) });
    expect(known.statusCode).toBe(404);
    expect(testConfig({}).credentials).toEqual([]);
  });
});
