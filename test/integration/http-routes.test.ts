import { parse } from 'csv-parse/sync';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadScreeningLists, type ScreeningLists } from '../../src/config/screening/screening-lists.ts';
import { buildApp } from '../../src/http/app.ts';
import { readAudit } from '../../src/store/audit.ts';
import { createLogger } from '../../src/log/logger.ts';
import { createWorkerMetrics } from '../../src/metrics/worker-metrics.ts';
import { EXPORT_COLUMNS } from '../../src/ops/export.ts';
import { createProducer, type Producer } from '../../src/queue/producer.ts';
import type { BatchStatus } from '../../src/present/batch-status.ts';
import type { StepsPatch } from '../../src/store/saved-steps.ts';
import { createTransferStore } from '../../src/store/transfer-store.ts';
import { randomEvmAddress } from '../helpers/fixtures.ts';
import { redisForSuite, startPrivateRedis, type TestRedis } from '../helpers/redis.ts';
import { jobIds, newPrefix, testConfig } from './ingest-fixtures.ts';

const HOOK = 'hook-token-routes-0123456789';
const APPROVER = 'approver-token-routes-9876543210';
const hook = { authorization: `Bearer ${HOOK}` };
const approver = { authorization: `Bearer ${APPROVER}` };
const logger = createLogger('silent');

let suite: Awaited<ReturnType<typeof redisForSuite>>;
let redis: Redis;
const opened: { app: FastifyInstance; producer: Producer }[] = [];

async function newApp(
  env: Record<string, string> = {},
  redisClient: Redis = redis,
  screening?: ScreeningLists,
) {
  const prefix = newPrefix();
  // These tests send dozens of refused requests from one address: the 429 after repeated failures
  // has its own test (http-hostile-input.test.ts), so it is turned off here.
  const config = testConfig({
    HOOK_TOKEN: HOOK,
    APPROVER_TOKEN: APPROVER,
    QUEUE_PREFIX: prefix,
    HTTP_AUTH_FAILURE_LIMIT: '0',
    ...env,
  });
  const producer = createProducer({ connection: suite.url, prefix });
  const app = await buildApp({ config, redis: redisClient, producer, logger, screening });
  opened.push({ app, producer });
  return { app, prefix };
}

/** `n` BASE→ARB rows of 10 USDC + i cents, each to its own recipient, through `POST /v1/batches`. */
async function postBatch(
  app: FastifyInstance,
  n: number,
  batchId: string,
  amount = (i: number) => `10.${String(i % 100).padStart(2, '0')}`,
) {
  const transfers = Array.from({ length: n }, (_, i) => ({
    id: `${batchId}-r${i}`,
    from: 'BASE',
    to: 'ARB',
    amount: amount(i),
    recipient: randomEvmAddress(),
    memo: i === 3 ? 'has, a comma "and quotes"' : `row ${i}`,
  }));
  const res = await app.inject({
    method: 'POST',
    url: '/v1/batches',
    headers: { ...hook, 'content-type': 'application/json' },
    payload: JSON.stringify({ batch_id: batchId, transfers }),
  });
  expect(res.statusCode, res.body).toBe(202);
  return res.json() as { batch_id: string; held: boolean; accepted: number };
}

async function status(app: FastifyInstance, url: string): Promise<BatchStatus> {
  const res = await app.inject({ method: 'GET', url, headers: hook });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as BatchStatus;
}

/** Drives transfers through the store's own atomic transition, as the worker does. */
async function settle(prefix: string, batchId: string, decide: (line: number) => 'submitted' | 'failed') {
  const store = createTransferStore({ redis, prefix });
  const ids = await redis.zrange(`${prefix}:batch:${batchId}:rows`, 0, -1, 'WITHSCORES');
  for (let i = 0; i < ids.length; i += 2) {
    const id = ids[i] as string;
    const line = Number(ids[i + 1]);
    const to = decide(line);
    const fields: StepsPatch =
      to === 'submitted'
        ? { intentId: `intent-${id}`, txHash: `0x${'ab'.repeat(32)}` }
        : { error: { code: 'estimate_refused', message: 'the service refused the estimate' } };
    const res = await store.transition(batchId, id, { expected: ['queued'], to, fields });
    expect(res.ok).toBe(true);
  }
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
  redis.disconnect();
  await suite.close();
});

describe('HTTP API authentication (inject)', () => {
  it('refuses every route but /healthz without the hook token, and with a wrong one', async () => {
    const { app } = await newApp();
    await postBatch(app, 2, 'auth-b');
    const routes: [string, string][] = [
      ['GET', '/readyz'],
      ['GET', '/v1/batches'],
      ['GET', '/v1/batches/auth-b'],
      ['GET', '/v1/batches/auth-b/export.csv'],
      ['POST', '/v1/batches/auth-b/retry'],
      ['POST', '/v1/batches/auth-b/approve'],
      ['POST', '/v1/batches'],
      ['GET', '/v1/audit'],
      ['GET', '/metrics'],
      ['GET', '/dashboard'],
      ['GET', '/dashboard/api/queues'],
      ['GET', '/no-such-route'],
    ];
    for (const [method, url] of routes) {
      for (const headers of [{}, { authorization: `Bearer ${HOOK}x` }, { authorization: HOOK }]) {
        const res = await app.inject({ method: method as 'GET', url, headers });
        expect(res.statusCode, `${method} ${url}`).toBe(401);
        expect(res.json()).toMatchObject({ statusCode: 401, code: 'USDC_HTTP_UNAUTHORIZED' });
      }
    }
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    // The approver reads what it approves (docs/access.md: role viewer too).
    expect((await app.inject({ method: 'GET', url: '/v1/batches', headers: approver })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/v1/batches', headers: hook })).statusCode).toBe(200);
    // Nothing the refused requests asked for happened.
    expect((await status(app, '/v1/batches/auth-b')).counts.queued).toBe(2);
  });

  it('opens the approve route to the approver token only: 401 without, 403 with the hook token', async () => {
    const { app } = await newApp({ APPROVAL_THRESHOLD_USDC: '1' });
    await postBatch(app, 2, 'appr-auth');
    const digest = (await status(app, '/v1/batches/appr-auth')).approval_digest;
    const approve = (headers: Record<string, string>) =>
      app.inject({
        method: 'POST',
        url: '/v1/batches/appr-auth/approve',
        headers: { ...headers, 'content-type': 'application/json' },
        payload: JSON.stringify({ digest }),
      });
    expect((await approve({})).statusCode).toBe(401);
    const byHook = await approve(hook);
    expect(byHook.statusCode).toBe(403);
    expect(byHook.json()).toMatchObject({ code: 'USDC_HTTP_FORBIDDEN', roles: ['approver'] });
    expect((await status(app, '/v1/batches/appr-auth')).held).toBe(true);
    const ok = await approve(approver);
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toEqual({
      batch_id: 'appr-auth',
      released: 2,
      already: false,
      held: false,
      approvals: 1,
      approvals_required: 1,
      approval_digest: digest,
    });
  });

  it('serves the dashboard only with the hook token (bearer or Basic), its static files without, and refuses writes', async () => {
    const { app, prefix } = await newApp();
    const page = await app.inject({ method: 'GET', url: '/dashboard' });
    expect(page.statusCode).toBe(401);
    expect(page.headers['www-authenticate']).toMatch(/^Basic realm=/);
    const withBearer = await app.inject({ method: 'GET', url: '/dashboard', headers: hook });
    expect(withBearer.statusCode).toBe(200);
    expect(withBearer.headers['content-type']).toMatch(/text\/html/);
    expect(withBearer.body).toContain('<base href="/dashboard/" />');
    const basic = `Basic ${Buffer.from(`ops:${HOOK}`).toString('base64')}`;
    const api = await app.inject({
      method: 'GET',
      url: '/dashboard/api/queues',
      headers: { authorization: basic },
    });
    expect(api.statusCode).toBe(200);
    const names = (api.json() as { queues: { name: string; readOnlyMode: boolean }[] }).queues.map((q) => [
      q.name,
      q.readOnlyMode,
    ]);
    expect(names.map(([n]) => n).sort()).toEqual(
      [
        'callbacks',
        'intents',
        'schedules',
        'transfers-ARB',
        'transfers-BASE',
        'transfers-ETH',
        'transfers-POLYGON',
        'transfers-SOLANA',
      ].sort(),
    );
    expect(names.every(([, ro]) => ro === true)).toBe(true);
    const wrongBasic = `Basic ${Buffer.from(`ops:${HOOK}x`).toString('base64')}`;
    expect(
      (
        await app.inject({
          method: 'GET',
          url: '/dashboard/api/queues',
          headers: { authorization: wrongBasic },
        })
      ).statusCode,
    ).toBe(401);
    // bull-board's own files (the same in every install, no data) load without credentials.
    const asset = withBearer.body.match(/static\/js\/main\.[^"']+\.js/)?.[0];
    expect(asset).toBeTruthy();
    const script = await app.inject({ method: 'GET', url: `/dashboard/${asset}` });
    expect(script.statusCode).toBe(200);
    expect(script.headers['content-type']).toMatch(/javascript/);
    // A write is refused even with the token, and the queue is not paused.
    const pause = await app.inject({
      method: 'PUT',
      url: '/dashboard/api/queues/transfers-BASE/pause',
      headers: hook,
    });
    expect(pause.statusCode).toBe(405);
    expect(pause.json()).toMatchObject({ code: 'USDC_HTTP_READ_ONLY' });
    expect(await redis.hget(`${prefix}:transfers-BASE:meta`, 'paused')).toBeNull();
  });
});

describe('HTTP status, export, retry, approve, audit (inject)', () => {
  let app: FastifyInstance;
  let prefix: string;
  const batchId = 'page-300';

  beforeAll(async () => {
    ({ app, prefix } = await newApp());
    await postBatch(app, 300, batchId);
    // Every 7th row failed, the rest submitted: the batch is complete.
    await settle(prefix, batchId, (line) => (line % 7 === 0 ? 'failed' : 'submitted'));
  });

  it('pages through a 300-row batch by cursor, and by state', async () => {
    const all = await status(app, `/v1/batches/${batchId}`);
    expect(all.transfers).toHaveLength(300);
    expect(all.next_cursor).toBeNull();
    expect(all.complete).toBe(true);
    const failedCount = all.transfers.filter((t) => t.state === 'failed').length;
    expect(all.counts).toMatchObject({ submitted: 300 - failedCount, failed: failedCount, queued: 0 });
    expect(failedCount).toBeGreaterThan(40);

    const seen: number[] = [];
    let cursor: string | null | undefined = '';
    let pages = 0;
    do {
      const doc = await status(app, `/v1/batches/${batchId}?limit=64${cursor ? `&cursor=${cursor}` : ''}`);
      expect(doc.transfers.length).toBeLessThanOrEqual(64);
      expect(doc.counts).toEqual(all.counts);
      seen.push(...doc.transfers.map((t) => t.line));
      cursor = doc.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(5);
    expect(seen).toEqual(all.transfers.map((t) => t.line));
    expect(new Set(seen).size).toBe(300);

    const failedLines: number[] = [];
    cursor = '';
    do {
      const doc = await status(
        app,
        `/v1/batches/${batchId}?state=failed&limit=10${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(doc.transfers.every((t) => t.state === 'failed')).toBe(true);
      failedLines.push(...doc.transfers.map((t) => t.line));
      cursor = doc.next_cursor;
    } while (cursor);
    expect(failedLines).toEqual(all.transfers.filter((t) => t.state === 'failed').map((t) => t.line));
  });

  it('answers bad paging parameters with 400 and an unknown batch with 404', async () => {
    for (const q of ['state=paid', 'limit=0', 'limit=10001', 'limit=ten', 'cursor=abc']) {
      const res = await app.inject({ method: 'GET', url: `/v1/batches/${batchId}?${q}`, headers: hook });
      expect(res.statusCode, q).toBe(400);
      expect(res.json()).toMatchObject({ code: 'USDC_HTTP_BAD_QUERY' });
    }
    for (const url of ['/v1/batches/nope', '/v1/batches/nope/export.csv', '/v1/batches/bad:id']) {
      const res = await app.inject({ method: 'GET', url, headers: hook });
      expect(res.statusCode, url).toBe(404);
      expect(res.json()).toMatchObject({ code: 'USDC_HTTP_NOT_FOUND' });
    }
    const retry = await app.inject({ method: 'POST', url: '/v1/batches/nope/retry', headers: hook });
    expect(retry.statusCode).toBe(404);
    expect(retry.json()).toMatchObject({ code: 'USDC_BATCH_NOT_FOUND' });
  });

  it('exports one CSV row per transfer, with intent ids and outcomes', async () => {
    const doc = await status(app, `/v1/batches/${batchId}`);
    const res = await app.inject({ method: 'GET', url: `/v1/batches/${batchId}/export.csv`, headers: hook });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toBe(`attachment; filename="${batchId}.csv"`);
    const rows = parse(res.body, { columns: true }) as Record<string, string>[];
    expect(Object.keys(rows[0] ?? {})).toEqual([...EXPORT_COLUMNS]);
    expect(rows).toHaveLength(300);
    rows.forEach((row, i) => {
      const t = doc.transfers[i]!;
      expect(row).toMatchObject({
        id: t.id,
        line: String(t.line),
        amount: t.amount,
        recipient: t.recipient,
        memo: t.memo ?? '',
        state: t.state,
        intent_id: t.intent_id ?? '',
        error_code: t.error?.code ?? '',
      });
    });
    expect(rows.find((r) => r.memo === 'has, a comma "and quotes"')).toBeTruthy();
  });

  it('retry re-queues only the failed transfers and re-opens the batch before answering', async () => {
    const before = await status(app, `/v1/batches/${batchId}?state=failed&limit=10000`);
    const failedIds = before.transfers.map((t) => t.id);
    const submittedBefore = before.counts.submitted;
    const jobsBefore = new Set(await jobIds(redis, prefix));
    const res = await app.inject({ method: 'POST', url: `/v1/batches/${batchId}/retry`, headers: hook });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ batch_id: batchId, requeued: failedIds.length });
    const after = await status(app, `/v1/batches/${batchId}?limit=1`);
    expect(after.complete).toBe(false);
    expect(after.counts).toMatchObject({ failed: 0, queued: failedIds.length, submitted: submittedBefore });
    const newJobs = (await jobIds(redis, prefix)).filter((j) => !jobsBefore.has(j));
    expect(newJobs.sort()).toEqual(failedIds.map((id) => `${batchId}/${id}/r1`).sort());
    // Nothing failed any more: a second retry re-queues nothing.
    const again = await app.inject({ method: 'POST', url: `/v1/batches/${batchId}/retry`, headers: hook });
    expect(again.json()).toEqual({ batch_id: batchId, requeued: 0 });
  });

  it('holds a batch at the approval threshold until the approver releases it; the audit names each actor', async () => {
    const { app: held, prefix: heldPrefix } = await newApp({ APPROVAL_THRESHOLD_USDC: '100' });
    const small = await postBatch(held, 3, 'under-threshold', () => '5');
    expect(small.held).toBe(false);
    const big = await postBatch(held, 12, 'over-threshold');
    expect(big.held).toBe(true);
    const doc = await status(held, '/v1/batches/over-threshold');
    expect(doc).toMatchObject({ held: true, complete: false, counts: { queued: 12 } });
    const jobs = await jobIds(redis, heldPrefix);
    expect(jobs.filter((j) => j.startsWith('over-threshold/'))).toEqual([]);
    expect(jobs.filter((j) => j.startsWith('under-threshold/'))).toHaveLength(3);

    const approveBody = JSON.stringify({ digest: doc.approval_digest });
    const ok = await held.inject({
      method: 'POST',
      url: '/v1/batches/over-threshold/approve',
      headers: { ...approver, 'content-type': 'application/json' },
      payload: approveBody,
    });
    expect(ok.json()).toMatchObject({ batch_id: 'over-threshold', released: 12, already: false });
    expect((await status(held, '/v1/batches/over-threshold')).held).toBe(false);
    expect((await jobIds(redis, heldPrefix)).filter((j) => j.startsWith('over-threshold/'))).toHaveLength(12);
    const twice = await held.inject({
      method: 'POST',
      url: '/v1/batches/over-threshold/approve',
      headers: { ...approver, 'content-type': 'application/json' },
      payload: approveBody,
    });
    expect(twice.json()).toMatchObject({ batch_id: 'over-threshold', released: 0, already: true });
    // A retry that re-queues nothing changes nothing: it is not in the audit (docs/audit.md).
    expect(
      (await held.inject({ method: 'POST', url: '/v1/batches/over-threshold/retry', headers: hook })).json(),
    ).toMatchObject({ requeued: 0 });

    const audit = await held.inject({ method: 'GET', url: '/v1/audit?batch=over-threshold', headers: hook });
    expect(audit.statusCode).toBe(200);
    const entries = (audit.json() as { entries: { action: string; who: string; batch: string }[] }).entries;
    expect(entries.map((e) => [e.action, e.who])).toEqual([
      ['approve', 'approver'],
      ['enqueue', 'hook'],
    ]);
    expect(entries.every((e) => e.batch === 'over-threshold')).toBe(true);
    const everything = await held.inject({ method: 'GET', url: '/v1/audit', headers: hook });
    const text = everything.body;
    expect(text).toContain('under-threshold');
    expect(text).not.toContain(HOOK);
    expect(text).not.toContain(APPROVER);
  });

  it('lists recent batches newest first with their counts', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/batches?limit=5', headers: hook });
    expect(res.statusCode).toBe(200);
    const { batches } = res.json() as { batches: BatchStatus[] };
    expect(batches.map((b) => b.batch_id)).toEqual([batchId]);
    expect(batches[0]).toMatchObject({ source: 'http', counts: { queued: expect.any(Number) } });
    expect(batches[0]).not.toHaveProperty('transfers');
  });
});

describe('/metrics and /readyz (inject)', () => {
  it('exposes transfers by state, queue depth and the workers’ service-call histogram in Prometheus format', async () => {
    const { app, prefix } = await newApp();
    await postBatch(app, 5, 'm-a');
    await postBatch(app, 3, 'm-b');
    await settle(prefix, 'm-b', (line) => (line === 2 ? 'failed' : 'submitted'));
    // What a worker records, through the same functions src/worker/start-worker.ts wires in.
    const worker = createWorkerMetrics({ redis, prefix });
    worker.onCall('estimate', 'ok', 40);
    worker.onCall('estimate', 'ok', 300);
    worker.onCall('transfer', 'ambiguous', 12_000);
    const store = worker.countRetries(createTransferStore({ redis, prefix }));
    const id = (await redis.zrange(`${prefix}:batch:m-a:rows`, 0, 0))[0] as string;
    await store.transition('m-a', id, { expected: ['queued'], to: 'in_progress' });
    await store.transition('m-a', id, {
      expected: ['in_progress'],
      to: 'queued',
      fields: { waitReason: 'x' },
    });
    // Workers buffer their increments for a second; closing flushes them (and waits for Redis).
    await worker.close();

    const res = await app.inject({ method: 'GET', url: '/metrics', headers: hook });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = res.body;
    expect(text).toContain('# TYPE usdc_batch_transfers gauge');
    expect(text).toMatch(/^usdc_batch_transfers\{state="queued"\} 5$/m);
    expect(text).toMatch(/^usdc_batch_transfers\{state="submitted"\} 2$/m);
    expect(text).toMatch(/^usdc_batch_transfers\{state="failed"\} 1$/m);
    expect(text).toMatch(/^usdc_batch_batches\{status="complete"\} 1$/m);
    expect(text).toMatch(/^usdc_batch_batches\{status="open"\} 1$/m);
    // 5 rows 10.00..10.04 + 3 rows 10.00..10.02 = 80.13 USDC.
    expect(text).toMatch(/^usdc_batch_amount_micro_usdc\{kind="amount"\} 80130000$/m);
    expect(text).toMatch(/^usdc_batch_queue_depth\{queue="transfers-BASE"\} 8$/m);
    expect(text).toMatch(/^usdc_batch_queue_jobs\{queue="transfers-BASE",state="waiting"\} 8$/m);
    expect(text).toMatch(/^usdc_batch_queue_depth\{queue="transfers-ETH"\} 0$/m);
    expect(text).toContain('# TYPE usdc_batch_service_call_duration_seconds histogram');
    expect(text).toMatch(
      /^usdc_batch_service_call_duration_seconds_bucket\{operation="estimate",outcome="ok",le="0.05"\} 1$/m,
    );
    expect(text).toMatch(
      /^usdc_batch_service_call_duration_seconds_bucket\{operation="estimate",outcome="ok",le="0.5"\} 2$/m,
    );
    expect(text).toMatch(
      /^usdc_batch_service_call_duration_seconds_count\{operation="estimate",outcome="ok"\} 2$/m,
    );
    expect(text).toMatch(
      /^usdc_batch_service_call_duration_seconds_sum\{operation="estimate",outcome="ok"\} 0.34$/m,
    );
    expect(text).toMatch(
      /^usdc_batch_service_call_duration_seconds_bucket\{operation="transfer",outcome="ambiguous",le="10"\} 0$/m,
    );
    expect(text).toMatch(
      /^usdc_batch_service_call_duration_seconds_bucket\{operation="transfer",outcome="ambiguous",le="20"\} 1$/m,
    );
    expect(text).toContain('# TYPE usdc_batch_retries_total counter');
    // The ambiguous transfer call is a call-level retry; the in_progress → queued hand-back a requeue.
    expect(text).toMatch(/^usdc_batch_retries_total\{kind="call"\} 1$/m);
    expect(text).toMatch(/^usdc_batch_retries_total\{kind="requeue"\} 1$/m);
    // prom-client's process and Node.js defaults, of the serve process.
    expect(text).toContain('# TYPE process_cpu_user_seconds_total counter');
    expect(text).toMatch(/^process_resident_memory_bytes [0-9]+$/m);
    expect(text).toMatch(/^nodejs_heap_size_used_bytes [0-9]+$/m);
    expect(text).toContain('# TYPE nodejs_eventloop_lag_seconds gauge');
    // Every app has its own registry: a second one in the same process registers the defaults too.
    const { app: second } = await newApp();
    const again = await second.inject({ method: 'GET', url: '/metrics', headers: hook });
    expect(again.statusCode).toBe(200);
    expect(again.body).toMatch(/^process_resident_memory_bytes [0-9]+$/m);
  });

  it('answers /readyz 200 while Redis answers and 503 when it does not', async () => {
    const { app } = await newApp();
    const ok = await app.inject({ method: 'GET', url: '/readyz', headers: hook });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toEqual({ status: 'ready', redis: 'ok' });

    let dead: TestRedis | undefined = await startPrivateRedis({ durable: false });
    const client = new Redis(dead.url, {
      maxRetriesPerRequest: 1,
      connectTimeout: 500,
      retryStrategy: () => 200,
    });
    client.on('error', () => {});
    try {
      const { app: down } = await newApp({}, client);
      expect((await down.inject({ method: 'GET', url: '/readyz', headers: hook })).statusCode).toBe(200);
      await dead.stop();
      dead = undefined;
      // An answer at all is the point: a /readyz that waited on Redis would time the test out.
      const res = await down.inject({ method: 'GET', url: '/readyz', headers: hook });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toMatchObject({ code: 'USDC_HTTP_NOT_READY' });
      const metrics = await down.inject({ method: 'GET', url: '/metrics', headers: hook });
      expect(metrics.statusCode).toBe(503);
      expect(metrics.json()).toMatchObject({ code: 'USDC_HTTP_METRICS_UNAVAILABLE' });
    } finally {
      await dead?.stop();
      client.disconnect();
    }
  });

  it('answers /readyz 503 while the Redis it reaches is a replica, not a primary (a failover under way)', async () => {
    // A replica of a primary that is gone: it answers, and takes no writes.
    const replica = await startPrivateRedis({ durable: false, extraArgs: ['--replicaof', '127.0.0.1', '1'] });
    const client = new Redis(replica.url, { maxRetriesPerRequest: 1 });
    client.on('error', () => {});
    try {
      const { app } = await newApp({}, client);
      const res = await app.inject({ method: 'GET', url: '/readyz', headers: hook });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toMatchObject({
        code: 'USDC_HTTP_NOT_READY',
        message: 'Redis answers as a replica, not a primary',
      });
    } finally {
      client.disconnect();
      await replica.stop();
    }
  });
});

describe('sanctions screening (inject; docs/screening.md)', () => {
  it('refuses a listed recipient as an invalid row of POST /v1/batches, and keeps it out of the address book', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'screening-http-'));
    try {
      const listed = randomEvmAddress();
      const file = join(dir, 'list.txt');
      writeFileSync(file, `# date: ${new Date().toISOString().slice(0, 10)}\n${listed.toLowerCase()}\n`);
      const lists = await loadScreeningLists([file], 7 * 86_400_000);
      const { app, prefix } = await newApp({}, redis, lists);
      const transfers = [randomEvmAddress(), listed.toUpperCase().replace('0X', '0x')].map(
        (recipient, i) => ({
          id: `scr-${i}`,
          from: 'BASE',
          to: 'ARB',
          amount: '5.00',
          recipient,
        }),
      );
      const res = await app.inject({
        method: 'POST',
        url: '/v1/batches',
        headers: { ...hook, 'content-type': 'application/json' },
        payload: JSON.stringify({ batch_id: 'scr-1', transfers }),
      });
      expect(res.statusCode, res.body).toBe(422);
      expect(res.body).toContain(`is on the sanctions list ${file} of`);
      const detail = (res.json() as { errors?: { line: number; column: string }[] }).errors ?? [];
      expect(detail).toEqual([expect.objectContaining({ line: 2, column: 'recipient' })]);

      const add = await app.inject({
        method: 'POST',
        url: '/v1/recipients',
        headers: { ...approver, 'content-type': 'application/json' },
        payload: JSON.stringify({ address: listed }),
      });
      expect(add.statusCode, add.body).toBe(422);
      expect(add.body).toContain('cannot enter the address book');
      const audit = await readAudit(redis, prefix);
      expect(audit.map((e) => [e.action, e.who])).toContainEqual(['screening_refused', `list:${file}`]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
