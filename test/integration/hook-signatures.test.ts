import { spawnSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkLedger, startStack, type Stack } from '../helpers/e2e.ts';
import { randomEvmAddress } from '../helpers/fixtures.ts';
import { REPO_ROOT } from '../helpers/cli.ts';
import { startServe, type ServeProcess } from '../helpers/serve.ts';

const HOOK = 'hook-token-signatures-0123456789';
const SECRET = 'whsec-signatures-0123456789abcdef';

/**
 * The signature schemes of docs/http-api.md "Signed requests", computed here independently of the product's code:
 * `v1` = HMAC-SHA256 of "t.body", `v2` = HMAC-SHA256 of "t.METHOD.PATH?QUERY.body".
 */
const now = () => Math.floor(Date.now() / 1000);
const hmac = (text: string) => createHmac('sha256', SECRET).update(text).digest('hex');
const v1 = (body: string, t = now()) => `t=${t},v1=${hmac(`${t}.${body}`)}`;
const v2 = (method: string, target: string, body: string, t = now()) =>
  `t=${t},v2=${hmac(`${t}.${method}.${target}.${body}`)}`;

/** An id-less CSV row: only the likely-duplicate rule (which `allow_duplicates` lifts) guards it. */
const csvOf = (recipient: string, amount: string) =>
  `from,to,amount,recipient\nBASE,ARB,${amount},${recipient}\n`;

/**
 * Finding 1 of issue 19: the HMAC covered `t.body` only while `POST /v1/batches` reads `batch_id`,
 * `allow_duplicates` and `skip_invalid` from the query, so a captured signed request with a changed
 * query paid the same row again. Through the real `serve`, a worker and the sandbox's ledger.
 */
describe('POST /v1/batches signatures cover the query that shapes the batch', () => {
  let stack: Stack;
  let api: ServeProcess;

  const post = async (target: string, body: string, signature: string) =>
    await api.call(target, {
      method: 'POST',
      token: HOOK,
      headers: { 'content-type': 'text/csv', 'x-signature': signature },
      body,
    });
  const paidTo = async (recipient: string) =>
    (await stack.ledger()).filter((e) => e.recipient.toLowerCase() === recipient.toLowerCase());

  beforeAll(async () => {
    stack = await startStack({ env: { HOOK_TOKEN: HOOK, HOOK_HMAC_SECRET: SECRET } });
    api = await startServe(stack.env);
    stack.startWorker();
  });
  afterAll(async () => {
    await api?.stop();
    await stack?.stop();
  });

  it('refuses a captured v1 request replayed with a query (the ledger shows one payment); an exact replay adds nothing', async () => {
    const recipient = randomEvmAddress();
    const body = csvOf(recipient, '7.25');
    const signature = v1(body);
    const first = await post('/v1/batches', body, signature);
    expect(first.status).toBe(202);
    const { batch_id: batchId } = (await first.json()) as { batch_id: string };
    const done = await stack.waitComplete(batchId, 60_000);
    expect(done.counts.submitted).toBe(1);

    // The probe's replays: the same body and signature, with a query that makes a new batch and
    // lifts the likely-duplicate rule. v1 does not cover a query, so it may not carry one.
    for (const query of [
      '?batch_id=other&allow_duplicates=true',
      '?batch_id=third&allow_duplicates=true',
      '?allow_duplicates=true',
      '?',
    ]) {
      const replay = await post(`/v1/batches${query}`, body, signature);
      expect(replay.status, query).toBe(401);
      expect(await replay.json()).toMatchObject({ code: 'USDC_HTTP_UNAUTHORIZED' });
    }
    // The exact replay is harmless: the same batch, nothing added.
    const exact = await post('/v1/batches', body, signature);
    expect(exact.status).toBe(202);
    expect(await exact.json()).toMatchObject({ batch_id: batchId, created: false, accepted: 1 });

    const listed = (await (await api.call('/v1/batches', { token: HOOK })).json()) as {
      batches: { batch_id: string }[];
    };
    expect(listed.batches.map((b) => b.batch_id)).not.toEqual(expect.arrayContaining(['other']));
    expect(listed.batches.map((b) => b.batch_id)).not.toEqual(expect.arrayContaining(['third']));
    const paid = await paidTo(recipient);
    expect(paid).toHaveLength(1);
    expect(checkLedger(done, paid)).toEqual({ paidTwice: [], problems: [] });
  });

  it('takes a v2 signature over the method, path and query as sent, and refuses it once the query changes', async () => {
    const recipient = randomEvmAddress();
    const body = csvOf(recipient, '3.5');
    const target = '/v1/batches?batch_id=signed-q1&skip_invalid=false';
    const signature = v2('POST', target, body);

    // Any change to what v2 covers is refused: another batch id, an added flag, the order of the
    // parameters, another method or path in the signed text.
    for (const [changed, header] of [
      ['/v1/batches?batch_id=signed-q2&skip_invalid=false', signature],
      [`${target}&allow_duplicates=true`, signature],
      ['/v1/batches?skip_invalid=false&batch_id=signed-q1', signature],
      [target, v2('PUT', target, body)],
      [target, v2('POST', '/v1/batches', body)],
      [target, v1(body)],
    ] as const) {
      const res = await post(changed, body, header);
      expect(res.status, changed).toBe(401);
    }
    // A v2 over a changed body is refused as well.
    expect((await post(target, csvOf(recipient, '35'), signature)).status).toBe(401);

    const ok = await post(target, body, signature);
    expect(ok.status).toBe(202);
    expect(await ok.json()).toMatchObject({ batch_id: 'signed-q1', created: true, accepted: 1 });
    const again = await post(target, body, signature);
    expect(again.status).toBe(202);
    expect(await again.json()).toMatchObject({ batch_id: 'signed-q1', created: false });

    const done = await stack.waitComplete('signed-q1', 60_000);
    expect(done.counts.submitted).toBe(1);
    expect((await api.call('/v1/batches/signed-q2', { token: HOOK })).status).toBe(404);
    const paid = await paidTo(recipient);
    expect(paid).toHaveLength(1);
    expect(checkLedger(done, paid)).toEqual({ paidTwice: [], problems: [] });
  });

  it('takes v2 on a request without a query too, over the path alone', async () => {
    const recipient = randomEvmAddress();
    const body = csvOf(recipient, '1.5');
    const res = await post('/v1/batches', body, v2('POST', '/v1/batches', body));
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({ created: true, accepted: 1 });
  });

  const haveTools = ['openssl', 'curl', 'bash'].every(
    (tool) => spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status === 0,
  );
  it.runIf(haveTools)('accepts the guide’s openssl + curl examples of v1 and v2 as written', () => {
    const page = readFileSync(join(REPO_ROOT, 'docs/http-api.md'), 'utf8');
    const block = /<!-- signed-request example[^>]*-->\n```sh\n([\s\S]*?)```/.exec(page)?.[1];
    expect(block, 'docs/http-api.md has the signed-request example').toBeDefined();
    // Two independent examples (v1, then v2), each run on its own file of fresh rows.
    const examples = (block as string).split('\n\n');
    expect(examples).toHaveLength(2);
    const answers = examples.map((script, i) => {
      const dir = mkdtempSync(join(tmpdir(), 'usdc-guide-sig-'));
      try {
        writeFileSync(
          join(dir, 'payouts.csv'),
          `id,from,to,amount,recipient\nreadme-${i},BASE,ETH,2.5,${randomEvmAddress()}\n`,
        );
        const run = spawnSync('bash', ['-euo', 'pipefail', '-c', script], {
          cwd: dir,
          encoding: 'utf8',
          timeout: 30_000,
          env: { PATH: process.env['PATH'], API: api.url, HOOK_TOKEN: HOOK, HOOK_HMAC_SECRET: SECRET },
        });
        expect(run.status, run.stderr).toBe(0);
        return JSON.parse(run.stdout) as { batch_id: string; created: boolean; accepted: number };
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
    expect(answers[0]).toMatchObject({ created: true, accepted: 1 });
    expect(answers[1]).toMatchObject({ batch_id: 'payroll-2025-06', created: true, accepted: 1 });
  });
});
