import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchStatus } from '../../src/present/batch-status.ts';
import { waitFor } from '../helpers/cli.ts';
import { checkLedger, jobsOfBatch, startStack, type Stack } from '../helpers/e2e.ts';
import { randomEvmAddress } from '../helpers/fixtures.ts';
import { startServe, type ServeProcess } from '../helpers/serve.ts';

const HOOK = 'hook-token-serve-0123456789';
const APPROVER = 'approver-token-serve-9876543210';

/** `n` BASE→ARB rows, each to its own recipient (the ledger tells them apart by recipient). */
function rows(n: number, tag: string, amount: string) {
  return Array.from({ length: n }, (_, i) => ({
    id: `${tag}-${i}`,
    from: 'BASE',
    to: 'ARB',
    amount,
    recipient: randomEvmAddress(),
  }));
}

describe('usdc-batch serve on a real port, with a worker process', () => {
  let stack: Stack;
  let api: ServeProcess;

  const post = async (path: string, token: string | undefined, body?: unknown) =>
    await api.call(path, {
      method: 'POST',
      token,
      ...(body === undefined
        ? {}
        : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
    });
  const get = async (path: string, token: string | undefined = HOOK) => await api.call(path, { token });
  const statusOf = async (path: string): Promise<BatchStatus> => {
    const res = await get(path);
    expect(res.status).toBe(200);
    return (await res.json()) as BatchStatus;
  };
  const paidTo = async (recipients: string[]) => {
    const set = new Set(recipients.map((r) => r.toLowerCase()));
    return (await stack.ledger()).filter((e) => set.has(e.recipient.toLowerCase()));
  };

  beforeAll(async () => {
    stack = await startStack({
      env: { HOOK_TOKEN: HOOK, APPROVER_TOKEN: APPROVER, APPROVAL_THRESHOLD_USDC: '100' },
    });
    // Its tests send over 20 refused requests in a row: the 429 that would follow has its own test
    // (http-hostile-input.test.ts).
    api = await startServe({ ...stack.env, HTTP_AUTH_FAILURE_LIMIT: '0' });
    stack.startWorker();
  });
  afterAll(async () => {
    await api?.stop();
    await stack?.stop();
  });

  it('answers 401 without the token on every route but /healthz; the dashboard 401 without and 200 with', async () => {
    for (const [method, path] of [
      ['GET', '/v1/batches'],
      ['GET', '/v1/batches/x'],
      ['GET', '/v1/batches/x/export.csv'],
      ['POST', '/v1/batches/x/retry'],
      ['POST', '/v1/batches/x/approve'],
      ['GET', '/v1/audit'],
      ['GET', '/readyz'],
      ['GET', '/metrics'],
      ['GET', '/dashboard'],
      ['GET', '/dashboard/api/queues'],
    ] as const) {
      const res = await api.call(path, { method });
      expect(res.status, `${method} ${path}`).toBe(401);
      expect(await res.json()).toMatchObject({ code: 'USDC_HTTP_UNAUTHORIZED' });
    }
    expect((await api.call('/healthz')).status).toBe(200);
    const dash = await get('/dashboard');
    expect(dash.status).toBe(200);
    expect(await dash.text()).toContain('<base href="/dashboard/" />');
    expect((await get('/dashboard/api/queues')).status).toBe(200);
  });

  it('answers 405 to every write on /dashboard (with the token; 401 without), as docs/http-api.md says', async () => {
    for (const method of ['PUT', 'POST', 'DELETE', 'PATCH']) {
      for (const path of ['/dashboard', '/dashboard/', '/dashboard/api/queues', '/dashboard/anything/else']) {
        const res = await api.call(path, { method, token: HOOK });
        expect(res.status, `${method} ${path}`).toBe(405);
        expect(res.headers.get('allow')).toBe('GET, HEAD');
        expect(await res.json()).toMatchObject({ code: 'USDC_HTTP_READ_ONLY' });
        expect((await api.call(path, { method })).status, `${method} ${path} without the token`).toBe(401);
      }
    }
    expect((await get('/dashboard')).status).toBe(200);
  });

  it('holds a batch at the approval threshold: nothing is paid until the approver releases it', async () => {
    const held = rows(4, 'held', '30');
    const res = await post('/v1/batches', HOOK, { batch_id: 'held-1', transfers: held });
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({ batch_id: 'held-1', held: true, accepted: 4 });

    // A running worker gets nothing to do: the held batch has no transfer job to take (its rows get
    // their jobs when it is released), so nothing is estimated, signed or paid.
    expect(await jobsOfBatch(stack.client, stack.env['QUEUE_PREFIX'] as string, 'held-1')).toEqual([]);
    const waiting = await statusOf('/v1/batches/held-1');
    expect(waiting).toMatchObject({ held: true, complete: false, counts: { queued: 4 } });
    expect(waiting.transfers.every((t) => t.attempts === 0 && t.fee === null)).toBe(true);
    expect(await paidTo(held.map((r) => r.recipient))).toEqual([]);

    const digest = waiting.approval_digest;
    expect(digest).toMatch(/^[0-9a-f]{64}$/);
    const byHook = await post('/v1/batches/held-1/approve', HOOK, { digest });
    expect(byHook.status).toBe(403);
    expect(await paidTo(held.map((r) => r.recipient))).toEqual([]);
    const ok = await post('/v1/batches/held-1/approve', APPROVER, { digest });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ batch_id: 'held-1', released: 4, already: false, held: false });

    const doc = await stack.waitComplete('held-1', 60_000);
    expect(doc).toMatchObject({ held: false, counts: { submitted: 4 } });
    const paid = await paidTo(held.map((r) => r.recipient));
    expect(paid).toHaveLength(4);
    expect(checkLedger(doc, paid)).toEqual({ paidTwice: [], problems: [] });
  });

  it('retry re-queues only the failed transfers, re-opens the batch before answering, and they are then paid once', async () => {
    // The first three estimates are refused (HTTP 400): those transfers end `failed`; one transfer
    // send meets a 429 and is re-sent.
    // The worker's own estimate at start (its key check) is behind it: the script is the rows'.
    await stack.workersReady();
    await stack.sandbox.admin.configure({
      failBeforeStatus: 400,
      faultScript: [
        { op: 'estimate', fault: 'fail_before' },
        { op: 'estimate', fault: 'fail_before' },
        { op: 'estimate', fault: 'fail_before' },
        { op: 'transfer', fault: 'rate_limit' },
      ],
    });
    // 8 × 5 USDC, and 3 × 5 more re-queued: 55 enqueued without approval in 24 h, under the
    // threshold of 100, so the retry is not held (held-1 was approved: it does not count).
    const batch = rows(8, 'rt', '5');
    const res = await post('/v1/batches', HOOK, { batch_id: 'retry-1', transfers: batch });
    expect(res.status).toBe(202);
    const first = await stack.waitComplete('retry-1', 60_000);
    expect(first.counts).toMatchObject({ failed: 3, submitted: 5 });
    await stack.sandbox.admin.configure({ failBeforeStatus: 503, faultScript: [] });

    const failed = await statusOf('/v1/batches/retry-1?state=failed');
    expect(failed.transfers.map((t) => t.error?.code)).toEqual([
      'estimate_refused',
      'estimate_refused',
      'estimate_refused',
    ]);
    const submittedBefore = first.transfers.filter((t) => t.state === 'submitted');

    const retry = await post('/v1/batches/retry-1/retry', HOOK);
    expect(retry.status).toBe(200);
    expect(await retry.json()).toEqual({ batch_id: 'retry-1', requeued: 3 });
    const reopened = await statusOf('/v1/batches/retry-1?limit=1');
    expect(reopened.complete).toBe(false);
    expect(reopened.counts.failed).toBe(0);
    expect(reopened.counts.submitted).toBe(5);

    const done = await stack.waitComplete('retry-1', 60_000);
    expect(done.counts).toMatchObject({ submitted: 8, failed: 0 });
    // The five already submitted were not sent again: the same intents, one payment per row.
    for (const t of submittedBefore) {
      expect(done.transfers.find((d) => d.id === t.id)?.intent_id).toBe(t.intent_id);
    }
    const paid = await paidTo(batch.map((r) => r.recipient));
    expect(paid).toHaveLength(8);
    expect(checkLedger(done, paid)).toEqual({ paidTwice: [], problems: [] });

    // Paging by state and the CSV export over the real port agree with the ledger.
    const page1 = await statusOf('/v1/batches/retry-1?state=submitted&limit=5');
    expect(page1.transfers).toHaveLength(5);
    expect(page1.next_cursor).toBe(String(page1.transfers[4]?.line));
    const page2 = await statusOf(`/v1/batches/retry-1?state=submitted&limit=5&cursor=${page1.next_cursor}`);
    expect(page2.transfers).toHaveLength(3);
    expect(page2.next_cursor).toBeNull();
    const csv = await get('/v1/batches/retry-1/export.csv');
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    const exported = parse(await csv.text(), { columns: true }) as Record<string, string>[];
    expect(exported).toHaveLength(8);
    const intents = new Map(paid.map((e) => [e.recipient.toLowerCase(), e.intent_id]));
    for (const row of exported) {
      expect(row['state']).toBe('submitted');
      expect(row['intent_id']).toBe(intents.get((row['recipient'] as string).toLowerCase()));
    }
  });

  it('shows on the dashboard job data that holds pointers only, never a secret', async () => {
    const allowedKeys: Record<string, string[]> = {
      intents: ['batchId', 'followedMs', 'intentId', 'transferId'],
      callbacks: ['batchId', 'generation'],
      schedules: ['name'],
    };
    let jobsSeen = 0;
    const names = (
      (await (await get('/dashboard/api/queues')).json()) as { queues: { name: string }[] }
    ).queues.map((q) => q.name);
    for (const queue of names) {
      const res = await get(
        `/dashboard/api/queues?activeQueue=${queue}&status=latest&page=1&jobsPerPage=100`,
      );
      expect(res.status).toBe(200);
      const text = await res.text();
      for (const secret of [stack.env['TRANSFER_API_KEY'], stack.env['EVM_PRIVATE_KEY'], HOOK, APPROVER]) {
        expect(text).not.toContain((secret as string).replace(/^0x/, ''));
      }
      const active = (
        JSON.parse(text) as { queues: { name: string; jobs: { data: object }[] }[] }
      ).queues.find((q) => q.name === queue);
      for (const job of active?.jobs ?? []) {
        jobsSeen++;
        const expected = allowedKeys[queue] ?? ['batchId', 'transferId'];
        expect(
          Object.keys(job.data).every((k) => expected.includes(k)),
          `${queue}: ${JSON.stringify(job.data)}`,
        ).toBe(true);
      }
    }
    // The transfer jobs of both batches (and their intents) were looked at.
    expect(jobsSeen).toBeGreaterThanOrEqual(15);
  });

  it('lists the actions in the audit with their actor, never a token', async () => {
    const res = await get('/v1/audit');
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(body).not.toContain(HOOK);
    expect(body).not.toContain(APPROVER);
    const entries = (JSON.parse(body) as { entries: { action: string; who: string; batch: string | null }[] })
      .entries;
    const of = (batch: string) => entries.filter((e) => e.batch === batch).map((e) => `${e.action} ${e.who}`);
    expect(of('held-1')).toEqual(['approve approver', 'enqueue hook']);
    expect(of('retry-1')).toEqual(['retry hook', 'enqueue hook']);
    const one = (await (await get('/v1/audit?batch=retry-1')).json()) as {
      entries: { action: string; detail: unknown }[];
    };
    expect(one.entries).toHaveLength(2);
    // `detail` is an object in the document, not JSON text inside it.
    expect(one.entries.find((e) => e.action === 'enqueue')?.detail).toMatchObject({
      source: 'http',
      held: false,
    });
    expect(one.entries.find((e) => e.action === 'retry')?.detail).toEqual({ requeued: expect.any(Number) });
  });

  it('lists the batches and exposes state gauges, queue depth and the worker’s call latency on /metrics', async () => {
    const list = (await (await get('/v1/batches')).json()) as { batches: BatchStatus[] };
    expect(list.batches.map((b) => b.batch_id)).toEqual(['retry-1', 'held-1']);
    // Workers flush their service-call counts to Redis once a second: scrape until the last flush
    // shows (a busy machine can delay a flush by seconds).
    const { res, text } = await waitFor(
      'the worker’s last flush of its call counts',
      async () => {
        const r = await get('/metrics');
        const t = await r.text();
        return /service_call_duration_seconds_count\{operation="transfer",outcome="ok"\} 12$/m.test(t)
          ? { res: r, text: t }
          : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(text).toMatch(/^usdc_batch_transfers\{state="submitted"\} 12$/m);
    expect(text).toMatch(/^usdc_batch_transfers\{state="queued"\} 0$/m);
    expect(text).toMatch(/^usdc_batch_batches\{status="complete"\} 2$/m);
    // 4 × 30 + 8 × 5 USDC requested.
    expect(text).toMatch(/^usdc_batch_amount_micro_usdc\{kind="amount"\} 160000000$/m);
    for (const chain of ['ETH', 'BASE', 'ARB', 'POLYGON', 'SOLANA']) {
      expect(text).toMatch(new RegExp(`^usdc_batch_queue_depth\\{queue="transfers-${chain}"\\} 0$`, 'm'));
    }
    expect(text).toMatch(/^usdc_batch_queue_jobs\{queue="transfers-BASE",state="completed"\} [1-9][0-9]*$/m);
    // Written into Redis by the worker process, read here by serve.
    const count = (op: string, outcome: string) =>
      Number(
        new RegExp(
          `^usdc_batch_service_call_duration_seconds_count\\{operation="${op}",outcome="${outcome}"\\} ([0-9]+)$`,
          'm',
        ).exec(text)?.[1] ?? -1,
      );
    expect(count('estimate', 'ok')).toBe(12);
    // The three refused rows, and the worker's key check at start: an estimate of 0.000001 USDC,
    // which the sandbox refuses as below its fee (HTTP 400: the key itself was accepted).
    expect(count('estimate', 'rejected')).toBe(4);
    expect(count('transfer', 'ok')).toBe(12);
    expect(count('transfer', 'rate_limited')).toBe(1);
    expect(text).toMatch(/^usdc_batch_retries_total\{kind="call"\} 1$/m);
  });

  it('answers /readyz 200 while Redis answers and 503 once it is down', async () => {
    const up = await get('/readyz');
    expect(up.status).toBe(200);
    await stack.redis.stopProcessOnly();
    const down = await waitFor(
      '/readyz to report Redis down',
      async () => {
        const res = await get('/readyz');
        return res.status === 503 ? res : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 250 },
    );
    expect(await down.json()).toMatchObject({ statusCode: 503, code: 'USDC_HTTP_NOT_READY' });
    expect((await api.call('/healthz')).status).toBe(200);
  });
});
