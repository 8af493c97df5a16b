import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CALLBACK_QUEUE } from '../../src/queue/callbacks.ts';
import type { BatchStatus } from '../../src/present/batch-status.ts';
import { runCli, waitFor } from '../helpers/cli.ts';
import { checkLedger, jobsOfBatch, startStack, type Stack } from '../helpers/e2e.ts';
import { randomEvmAddress } from '../helpers/fixtures.ts';
import { startServe, type ServeProcess } from '../helpers/serve.ts';

const HOOK = 'hook-token-callbacks-0123456789';
const HMAC_SECRET = 'whsec-callbacks-0123456789abcdef';

type Received = { method: string; url: string; headers: IncomingHttpHeaders; body: string };

/** A plain HTTP receiver on 127.0.0.1 that records every request it gets. */
async function receiver(): Promise<{ server: Server; port: number; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || !address) throw new Error('no port');
  return { server, port: address.port, received };
}

/**
 * The hook's signature rule (docs/http-api.md), checked independently of the product's code: on a
 * request without a query string `v1` = HMAC-SHA256 of "t.body"; on one with a query, which v1
 * does not cover, only `v2` = HMAC-SHA256 of "t.METHOD.PATH?QUERY.body", the target as received.
 */
function signatureValid(
  header: string | undefined,
  request: { method: string; url: string; body: string },
  secret: string,
): boolean {
  const withQuery = request.url.includes('?');
  const m = (withQuery ? /^t=([0-9]+),v2=([0-9a-f]{64})$/ : /^t=([0-9]+),v1=([0-9a-f]{64})$/).exec(
    header ?? '',
  );
  if (!m) return false;
  const text = withQuery
    ? `${m[1]}.${request.method}.${request.url}.${request.body}`
    : `${m[1]}.${request.body}`;
  const expected = createHmac('sha256', secret).update(text).digest();
  const fresh = Math.abs(Date.now() / 1000 - Number(m[1])) < 300;
  return fresh && timingSafeEqual(Buffer.from(m[2] as string, 'hex'), expected);
}

function signed(body: string): Record<string, string> {
  const t = Math.floor(Date.now() / 1000);
  const v1 = createHmac('sha256', HMAC_SECRET).update(`${t}.${body}`).digest('hex');
  return { 'content-type': 'application/json', 'x-signature': `t=${t},v1=${v1}` };
}

/**
 * Callback safety (docs/configuration.md CALLBACK_ALLOWED_HOSTS, docs/http-api.md "Callbacks"): only the allowed loopback receiver
 * (listed as host:port) is ever called; a second receiver on the same interface but another port is
 * not listed and must never get a request.
 */
describe('treasury controls: callbacks only to allowed hosts, signed', () => {
  let stack: Stack;
  let api: ServeProcess;
  let allowed: Awaited<ReturnType<typeof receiver>>;
  let unlisted: Awaited<ReturnType<typeof receiver>>;

  const transfers = (tag: string, n: number) =>
    Array.from({ length: n }, (_, i) => ({
      id: `${tag}-${i}`,
      from: 'ARB',
      to: 'BASE',
      amount: '12.5',
      recipient: randomEvmAddress(),
    }));
  const postBatch = async (doc: unknown) => {
    const body = JSON.stringify(doc);
    return await api.call('/v1/batches', { method: 'POST', token: HOOK, headers: signed(body), body });
  };

  beforeAll(async () => {
    allowed = await receiver();
    unlisted = await receiver();
    stack = await startStack({
      env: {
        HOOK_TOKEN: HOOK,
        HOOK_HMAC_SECRET: HMAC_SECRET,
        CALLBACK_ALLOWED_HOSTS: `127.0.0.1:${allowed.port},hooks.example.com`,
      },
    });
    api = await startServe(stack.env);
    stack.startWorker();
  });
  afterAll(async () => {
    await api?.stop();
    await stack?.stop();
    await Promise.all(
      [allowed, unlisted].map((r) =>
        r ? new Promise<void>((res) => r.server.close(() => res())) : undefined,
      ),
    );
  });

  it('refuses a callback_url on an unlisted host with 422; nothing is enqueued and no request is made', async () => {
    for (const url of [
      `http://127.0.0.1:${unlisted.port}/hook`,
      `http://localhost:${unlisted.port}/hook`,
      'https://attacker.example.net/hook',
      // A listed name over plain http (not loopback) is refused as well.
      'http://hooks.example.com/hook',
    ]) {
      const res = await postBatch({
        batch_id: 'cb-refused',
        transfers: transfers('ref', 2),
        callback_url: url,
      });
      expect(res.status, url).toBe(422);
      const body = (await res.json()) as { code: string; errors: { column: string; message: string }[] };
      expect(body.code).toBe('USDC_INGEST_REJECTED');
      expect(body.errors).toEqual([expect.objectContaining({ column: 'callback_url' })]);
    }
    expect((await api.call('/v1/batches/cb-refused', { token: HOOK })).status).toBe(404);
    // Nothing can send later either: no transfer job and no callback job exist for it.
    const prefix = stack.env['QUEUE_PREFIX'] as string;
    expect(await jobsOfBatch(stack.client, prefix, 'cb-refused')).toEqual([]);
    expect(await stack.client.keys(`${prefix}:${CALLBACK_QUEUE}:cb-refused*`)).toEqual([]);
    expect(unlisted.received).toEqual([]);
    expect(allowed.received).toEqual([]);
    expect(await stack.ledger()).toEqual([]);
  });

  it('sends one POST of the final status document, signed with HOOK_HMAC_SECRET, when the batch completes', async () => {
    const rows = transfers('ok', 3);
    const res = await postBatch({
      batch_id: 'cb-ok',
      transfers: rows,
      callback_url: `http://127.0.0.1:${allowed.port}/payouts/done?src=usdc`,
    });
    expect(res.status).toBe(202);
    const delivered = await waitFor('the completion callback', async () => allowed.received[0], {
      timeoutMs: 60_000,
      intervalMs: 200,
    });
    expect(delivered.method).toBe('POST');
    expect(delivered.url).toBe('/payouts/done?src=usdc');
    expect(delivered.headers['content-type']).toMatch(/^application\/json/);
    // The callback URL has a query string, so it is signed v2, over the target as sent.
    const header = delivered.headers['x-signature'] as string;
    expect(header).toMatch(/^t=[0-9]+,v2=[0-9a-f]{64}$/);
    expect(signatureValid(header, delivered, HMAC_SECRET)).toBe(true);
    expect(signatureValid(header, delivered, `${HMAC_SECRET}x`)).toBe(false);
    expect(
      signatureValid(
        header,
        { ...delivered, body: delivered.body.replace('"cb-ok"', '"cb-ko"') },
        HMAC_SECRET,
      ),
    ).toBe(false);
    expect(signatureValid(header, { ...delivered, url: '/payouts/done?src=other' }, HMAC_SECRET)).toBe(false);

    const doc = JSON.parse(delivered.body) as BatchStatus;
    expect(doc).toMatchObject({ batch_id: 'cb-ok', complete: true, held: false, counts: { submitted: 3 } });
    // The settlement as it is at completion: paid totals, and `settled` (a boolean, or null).
    expect(doc.totals.paid.amount).toBe(doc.totals.amount);
    expect(typeof doc.settled === 'boolean' || doc.settled === null).toBe(true);
    expect(doc.intents.complete + doc.intents.failed + doc.intents.untracked + doc.intents.open).toBe(3);
    expect(doc.transfers.map((t) => t.id)).toEqual(['ok-0', 'ok-1', 'ok-2']);
    const ledger = await stack.ledger();
    expect(checkLedger(doc, ledger)).toEqual({ paidTwice: [], problems: [] });
    expect(doc.transfers.every((t) => t.intent_id !== null)).toBe(true);

    // One completion, one callback: the batch's one callback job has finished, as sent (read through
    // BullMQ's API), so no other POST can follow; the unlisted receiver never heard from us.
    const callbacks = new Queue(CALLBACK_QUEUE, {
      connection: { url: stack.redis.url },
      prefix: stack.env['QUEUE_PREFIX'] as string,
    });
    try {
      const job = await waitFor(
        'the callback job to finish',
        async () => {
          const j = await callbacks.getJob('cb-ok/cb1');
          return j?.finishedOn ? j : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 100 },
      );
      expect(await job.getState()).toBe('completed');
      expect(job.returnvalue).toBe('sent');
      const ofBatch = (await callbacks.getJobs()).filter(
        (j) => (j.data as { batchId?: string }).batchId === 'cb-ok',
      );
      expect(ofBatch.map((j) => j.id)).toEqual(['cb-ok/cb1']);
    } finally {
      await callbacks.close();
    }
    expect(allowed.received).toHaveLength(1);
    expect(unlisted.received).toEqual([]);
  });

  it('adds no callback job for a batch without a callback_url', async () => {
    const res = await postBatch({ batch_id: 'cb-none', transfers: transfers('none', 2) });
    expect(res.status).toBe(202);
    await stack.waitComplete('cb-none', 60_000);
    const prefix = stack.env['QUEUE_PREFIX'] as string;
    // The completion hook runs inside the last transfer job, before that job finishes.
    await waitFor(
      'the transfer jobs to finish',
      async () => {
        const jobs = await jobsOfBatch(stack.client, prefix, 'cb-none');
        const done = await Promise.all(jobs.map((k) => stack.client.hget(k, 'finishedOn')));
        return jobs.length === 2 && done.every((v) => v !== null);
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    expect(await stack.client.keys(`${prefix}:callbacks:cb-none*`)).toEqual([]);
    // The batch with a callback has its job.
    expect(await stack.client.exists(`${prefix}:callbacks:cb-ok/cb1`)).toBe(1);
  });

  it('sends the callback of a batch that a cancel completed, as of any completion', async () => {
    // Paused, no worker takes a row: the cancel makes every one of them final.
    expect((await runCli(['pause'], stack.env)).code).toBe(0);
    try {
      const before = allowed.received.length;
      const res = await postBatch({
        batch_id: 'cb-cancel',
        transfers: transfers('cx', 2),
        callback_url: `http://127.0.0.1:${allowed.port}/payouts/done`,
      });
      expect(res.status).toBe(202);
      const cancelled = await api.call('/v1/batches/cb-cancel/cancel', { method: 'POST', token: HOOK });
      expect(await cancelled.json()).toMatchObject({ cancelled: 2 });
      const delivered = await waitFor(
        'the completion callback',
        async () => allowed.received.slice(before).find((r) => r.body.includes('"cb-cancel"')),
        { timeoutMs: 30_000, intervalMs: 200 },
      );
      expect(signatureValid(delivered.headers['x-signature'] as string, delivered, HMAC_SECRET)).toBe(true);
      expect(JSON.parse(delivered.body)).toMatchObject({
        batch_id: 'cb-cancel',
        complete: true,
        counts: { cancelled: 2, submitted: 0 },
      });
    } finally {
      expect((await runCli(['resume'], stack.env)).code).toBe(0);
    }
  });
});

/**
 * Finding 4 of issue 19: with `127.0.0.1` allowed, a callback_url naming another port of that host
 * (`http://127.0.0.1:6379/…`, the Redis) was accepted and the worker POSTed into it. A bare host now
 * allows only its scheme's default port: refused at enqueue (422), and again by the worker that sends.
 */
describe('treasury controls: callbacks never go to a port that is not listed', () => {
  let stack: Stack;
  let bare: ServeProcess;
  let listed: ServeProcess;
  let target: Awaited<ReturnType<typeof receiver>>;

  const postTo = async (api: ServeProcess, doc: unknown) => {
    const body = JSON.stringify(doc);
    return await api.call('/v1/batches', { method: 'POST', token: HOOK, headers: signed(body), body });
  };
  const transfers = (tag: string) => [
    { id: `${tag}-0`, from: 'ARB', to: 'BASE', amount: '2', recipient: randomEvmAddress() },
  ];

  beforeAll(async () => {
    target = await receiver();
    // The worker and the first API allow the bare loopback host (port 80 only); the second API
    // lists the receiver's port, so a batch naming it is stored, and the worker must still refuse.
    stack = await startStack({
      env: { HOOK_TOKEN: HOOK, HOOK_HMAC_SECRET: HMAC_SECRET, CALLBACK_ALLOWED_HOSTS: '127.0.0.1' },
    });
    bare = await startServe(stack.env);
    listed = await startServe({ ...stack.env, CALLBACK_ALLOWED_HOSTS: `127.0.0.1:${target.port}` });
    stack.startWorker();
  });
  afterAll(async () => {
    await bare?.stop();
    await listed?.stop();
    await stack?.stop();
    if (target) await new Promise<void>((res) => target.server.close(() => res()));
  });

  it('refuses at enqueue (422) a callback_url on an unlisted port of an allowed bare host', async () => {
    for (const url of [
      `http://127.0.0.1:${stack.redis.port}/`,
      `http://127.0.0.1:${target.port}/hook`,
      `http://127.0.0.1:${stack.sandbox.port}/__admin/reset`,
    ]) {
      const res = await postTo(bare, {
        batch_id: 'port-refused',
        transfers: transfers('pr'),
        callback_url: url,
      });
      expect(res.status, url).toBe(422);
      const doc = (await res.json()) as { errors: { column: string; message: string }[] };
      expect(doc.errors).toEqual([
        expect.objectContaining({
          column: 'callback_url',
          message: expect.stringMatching(
            /^callback_url port [0-9]+ of host "127\.0\.0\.1" is not in CALLBACK_ALLOWED_HOSTS/,
          ),
        }),
      ]);
    }
    expect((await bare.call('/v1/batches/port-refused', { token: HOOK })).status).toBe(404);
    expect(await stack.ledger()).toEqual([]);
  });

  it('checks again when sending: a worker whose list lacks the port does not call it', async () => {
    const res = await postTo(listed, {
      batch_id: 'port-send',
      transfers: transfers('ps'),
      callback_url: `http://127.0.0.1:${target.port}/hook`,
    });
    expect(res.status).toBe(202);
    const done = await stack.waitComplete('port-send', 60_000);
    expect(done.counts.submitted).toBe(1);
    // The callback job of the first completion ends without a request: the worker refused it.
    // BullMQ's job hash: <prefix>:<queue>:<job id>, the job id being <batch>/cb<generation>.
    const job = `${stack.env['QUEUE_PREFIX']}:callbacks:port-send/cb1`;
    const outcome = await waitFor(
      'the callback job to finish',
      async () => (await stack.client.hget(job, 'returnvalue')) ?? undefined,
      {
        timeoutMs: 30_000,
        intervalMs: 100,
      },
    );
    expect(JSON.parse(outcome)).toBe('not_allowed');
    expect(target.received).toEqual([]);
  });
});
