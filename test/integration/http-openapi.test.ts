import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { FastifyInstance, HTTPMethods } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.ts';
import { ROLES_FOR, ruleOf } from '../../src/http/route-table.ts';
import { createLogger } from '../../src/log/logger.ts';
import { createProducer, type Producer } from '../../src/queue/producer.ts';
import { createTransferStore } from '../../src/store/transfer-store.ts';
import { randomEvmAddress } from '../helpers/fixtures.ts';
import { redisForSuite } from '../helpers/redis.ts';
import { newPrefix, testConfig } from './ingest-fixtures.ts';

const HOOK = 'hook-token-openapi-0123456789';
const APPROVER = 'approver-token-openapi-98765';
const hook = { authorization: `Bearer ${HOOK}` };

/** Every route of docs/http-api.md, and the pages' own, as OpenAPI writes them. */
const ROUTES = [
  'GET /healthz',
  'GET /readyz',
  'POST /v1/batches',
  'GET /v1/batches',
  'GET /v1/batches/{id}',
  'GET /v1/batches/{id}/export.csv',
  'GET /v1/batches/{id}/export.json',
  'POST /v1/batches/{id}/retry',
  'POST /v1/batches/{id}/cancel',
  'POST /v1/batches/{id}/approve',
  'GET /v1/recipients',
  'POST /v1/recipients',
  'DELETE /v1/recipients',
  'DELETE /v1/recipients/{address}',
  'GET /v1/audit',
  'GET /v1/treasury',
  'GET /metrics',
  'GET /dashboard',
  'GET /ui',
  'GET /ui/batches/{id}',
  'GET /ui/batches/{id}/audit',
  'GET /ui/batches/{id}/export.csv',
  'GET /ui/treasury',
  'GET /openapi.json',
];

type Doc = {
  openapi: string;
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }> }>
  >;
};

describe('GET /openapi.json', () => {
  let suite: Awaited<ReturnType<typeof redisForSuite>>;
  let redis: Redis;
  let producer: Producer;
  let app: FastifyInstance;
  let prefix: string;
  let doc: Doc;
  let resolved: Doc;
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });

  beforeAll(async () => {
    suite = await redisForSuite();
    redis = new Redis(suite.url);
    prefix = newPrefix();
    producer = createProducer({ connection: suite.url, prefix });
    app = await buildApp({
      config: testConfig({ HOOK_TOKEN: HOOK, APPROVER_TOKEN: APPROVER, QUEUE_PREFIX: prefix }),
      redis,
      producer,
      logger: createLogger('silent'),
    });
    const res = await app.inject({ method: 'GET', url: '/openapi.json', headers: hook });
    expect(res.statusCode).toBe(200);
    doc = res.json() as Doc;
    resolved = (await SwaggerParser.dereference(structuredClone(doc) as never)) as unknown as Doc;
  });
  afterAll(async () => {
    await app?.close();
    await producer?.close();
    redis?.disconnect();
    await suite?.close();
  });

  it('needs the hook token, like every route but /healthz', async () => {
    const res = await app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(401);
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    expect(doc.openapi).toBe('3.1.0');
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeDefined();
  });

  it('lists every route, and only routes the app has', () => {
    const listed = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(listed.sort()).toEqual([...ROUTES].sort());
    for (const route of listed) {
      const [method, path] = route.split(' ') as [HTTPMethods, string];
      expect(app.hasRoute({ method, url: path.replace(/\{(\w+)\}/g, ':$1') }), route).toBe(true);
    }
  });

  it("states each operation's roles, from the route table, and its 403", () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const route = `${method.toUpperCase()} ${path}`;
        const rule = ruleOf(method.toUpperCase(), path.replace(/\{(\w+)\}/g, ':$1'));
        expect(rule, route).toBeDefined();
        const { security, responses } = op as unknown as {
          security: Record<string, string[]>[];
          responses: Record<string, unknown>;
          'x-roles'?: string[];
        };
        if (rule?.access === 'public') {
          expect(security, route).toEqual([]);
          expect(responses['403'], route).toBeUndefined();
          continue;
        }
        const roles = [...ROLES_FOR[rule!.access]];
        expect(security[0], route).toEqual({ bearer: roles });
        expect((op as { 'x-roles'?: string[] })['x-roles'], route).toEqual(roles);
        expect(responses['403'], route).toBeDefined();
      }
    }
    const post = doc.paths['/v1/batches']?.['post'] as unknown as { security: unknown; description: string };
    expect(post.security).toEqual([{ bearer: ['submitter'] }]);
    expect(post.description).toContain('Roles: submitter.');
  });

  it('gives every operation its own operationId', () => {
    const ids = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => {
        const id = (op as { operationId?: unknown }).operationId;
        expect(typeof id, `${method.toUpperCase()} ${path}`).toBe('string');
        expect(id as string, `${method.toUpperCase()} ${path}`).toMatch(/^[A-Za-z][A-Za-z0-9]*$/);
        return id as string;
      }),
    );
    expect(ids).toHaveLength(ROUTES.length);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('declares, on every API route that takes credentials, the 429 of repeated failures and the 400 of a malformed query', () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const responses = (op as { responses: Record<string, { content?: object }> }).responses;
        // The API's routes (JSON answers); the pages for people answer their login in HTML.
        if (!responses['401']?.content || !('application/json' in responses['401'].content)) continue;
        expect(Object.keys(responses), `${method.toUpperCase()} ${path}`).toEqual(
          expect.arrayContaining(['400', '429']),
        );
      }
    }
  });

  /** The JSON schema the document declares for an answer of `route` with `status`. */
  function declared(route: string, status: number): object {
    const [method, path] = route.split(' ') as [string, string];
    const schema =
      resolved.paths[path]?.[method.toLowerCase()]?.responses[String(status)]?.content?.['application/json']
        ?.schema;
    if (!schema) throw new Error(`${route} declares no JSON answer for ${status}`);
    return schema;
  }

  function expectDescribed(route: string, status: number, body: unknown): void {
    const validate = ajv.compile(declared(route, status));
    expect(validate(body), `${route} ${status}: ${ajv.errorsText(validate.errors)}`).toBe(true);
  }

  it('describes the real answers: each one validates against its declared schema', async () => {
    const transfers = Array.from({ length: 3 }, (_, i) => ({
      id: `oa-${i}`,
      from: 'BASE',
      to: 'ARB',
      amount: `${i + 1}.25`,
      recipient: randomEvmAddress(),
      memo: i === 0 ? 'first' : undefined,
    }));
    const posted = await app.inject({
      method: 'POST',
      url: '/v1/batches',
      headers: { ...hook, 'content-type': 'application/json' },
      payload: JSON.stringify({ batch_id: 'oa-b1', transfers }),
    });
    expect(posted.statusCode).toBe(202);
    expectDescribed('POST /v1/batches', 202, posted.json());

    // One row submitted, one failed, one still queued: every kind of value a row can hold.
    const store = createTransferStore({ redis, prefix });
    await store.saveEstimate('oa-b1', 'oa-0', {
      fee: { total: 100_000n, platform: 90_000n, gas: 10_000n },
      netReceive: 1_150_000n,
    });
    await store.transition('oa-b1', 'oa-0', {
      expected: ['queued'],
      to: 'submitted',
      fields: { intentId: 'int_1', intentStatus: 'pending', txHash: `0x${'ab'.repeat(32)}` },
    });
    await store.transition('oa-b1', 'oa-1', {
      expected: ['queued'],
      to: 'failed',
      fields: { error: { code: 'refused', message: 'no' } },
    });

    const checks: [string, string, number][] = [
      ['GET /v1/batches/{id}', '/v1/batches/oa-b1', 200],
      ['GET /v1/batches/{id}', '/v1/batches/oa-b1?limit=1', 200],
      ['GET /v1/batches/{id}', '/v1/batches/no-such', 404],
      ['GET /v1/batches/{id}', '/v1/batches/oa-b1?state=paid', 400],
      ['GET /v1/batches', '/v1/batches', 200],
      ['GET /v1/audit', '/v1/audit?batch=oa-b1', 200],
      ['GET /v1/recipients', '/v1/recipients', 200],
      ['GET /healthz', '/healthz', 200],
      ['GET /readyz', '/readyz', 200],
    ];
    for (const [route, url, status] of checks) {
      const res = await app.inject({ method: 'GET', url, headers: hook });
      expect(res.statusCode, url).toBe(status);
      expectDescribed(route, status, res.json());
    }
    // …and the schemas are not vacuous: a document with a wrong value or a missing field fails.
    const real = (
      await app.inject({ method: 'GET', url: '/v1/batches/oa-b1', headers: hook })
    ).json() as Record<string, unknown>;
    const status = ajv.compile(declared('GET /v1/batches/{id}', 200));
    expect(status({ ...real, settled: 'yes' })).toBe(false);
    expect(status({ ...real, totals: { amount: '1.00', fee: '0.10', net_receive: '0.90' } })).toBe(false);
    const { intent_id: _dropped, ...noIntent } = (real['transfers'] as Record<string, unknown>[])[0]!;
    expect(status({ ...real, transfers: [noIntent] })).toBe(false);

    const exported = await app.inject({ method: 'GET', url: '/v1/batches/oa-b1/export.json', headers: hook });
    expectDescribed('GET /v1/batches/{id}/export.json', 200, exported.json());

    const rejected = await app.inject({
      method: 'POST',
      url: '/v1/batches',
      headers: { ...hook, 'content-type': 'text/csv' },
      payload: 'from,to,amount,recipient\nBASE,ARB,-1,nope\n',
    });
    expect(rejected.statusCode).toBe(422);
    expectDescribed('POST /v1/batches', 422, rejected.json());
    const retried = await app.inject({ method: 'POST', url: '/v1/batches/oa-b1/retry', headers: hook });
    expectDescribed('POST /v1/batches/{id}/retry', 200, retried.json());
    const cancelled = await app.inject({
      method: 'POST',
      url: '/v1/batches/oa-b1/cancel',
      headers: { ...hook, 'content-type': 'application/json' },
      payload: JSON.stringify({ transfers: ['oa-0', 'oa-1'] }),
    });
    // oa-1 was re-queued by the retry: cancelled; oa-0 was sent: left alone.
    expect(cancelled.json()).toEqual({
      batch_id: 'oa-b1',
      cancelled: 1,
      transfers: ['oa-1'],
      not_cancelled: [{ id: 'oa-0', state: 'submitted' }],
    });
    expectDescribed('POST /v1/batches/{id}/cancel', 200, cancelled.json());
    const badCancel = await app.inject({
      method: 'POST',
      url: '/v1/batches/oa-b1/cancel',
      headers: { ...hook, 'content-type': 'application/json' },
      payload: JSON.stringify({ transfers: 'oa-1' }),
    });
    expect(badCancel.statusCode).toBe(400);
    expectDescribed('POST /v1/batches/{id}/cancel', 400, badCancel.json());
  });

  it('sends answers as the handlers build them: a declared schema drops or changes nothing', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/batches/oa-b1', headers: hook });
    const body = res.json() as Record<string, unknown> & { transfers: Record<string, unknown>[] };
    // Fields the schema does not list (wait_reason is listed; these are the document's own) stay.
    expect(Object.keys(body)).toEqual([
      'batch_id', 'created_at', 'source', 'submitted_by', 'complete', 'settled', 'held', 'held_reason',
      'approval_digest', 'approvals', 'approvals_required', 'counts', 'intents', 'totals', 'paused',
      'transfers', 'screening', 'next_cursor',
    ]); // prettier-ignore
    const queued = body.transfers.find((t) => t['id'] === 'oa-2')!;
    // Not estimated yet: its fee and net are null (never 0.00), and so are the planned totals.
    expect(queued).toMatchObject({ intent_id: null, memo: null, error: null, fee: null, net_receive: null });
    expect(body['totals']).toMatchObject({ amount: '6.75', fee: null, net_receive: null });
    expect(res.body).toBe(JSON.stringify(body));
  });
});
