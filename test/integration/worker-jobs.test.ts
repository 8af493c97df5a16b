import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { encodeBase58 } from '../../src/domain/base58.ts';
import type { BatchStatus } from '../../src/present/batch-status.ts';
import type { TransferView } from '../../src/present/transfer-view.ts';
import { REPO_ROOT, runCli, waitFor, type SpawnedProcess } from '../helpers/cli.ts';
import { checkLedger, jobsOfBatch, startStack, type Stack } from '../helpers/e2e.ts';
import { chromiumMissing, launchBrowser, screenshotDir } from '../helpers/browser.ts';
import { mixedRows, randomEvmAddress, type Row } from '../helpers/fixtures.ts';
import { dumpQueueKeys, readJob, type StoredJob } from '../helpers/job-hashes.ts';
import { TEST_EVM_KEY } from '../helpers/sandbox.ts';
import { startServe, type ServeProcess } from '../helpers/serve.ts';

const HOOK = 'hook-token-jobs-0123456789';
/** The outcome object's fields, docs/data-model.md "BullMQ jobs". */
const OUTCOME_KEYS = [
  'amount',
  'attempts',
  'batch_id',
  'error',
  'fee',
  'from',
  'intent_id',
  'intent_status',
  'line',
  'new_recipient',
  'owner',
  'recipient',
  'state',
  'to',
  'transfer_id',
  'tx_hash',
  'tx_signature',
];
const QUEUES = ['transfers-ETH', 'transfers-BASE', 'transfers-ARB', 'transfers-POLYGON', 'transfers-SOLANA'];

/**
 * What the queue tells ops, read straight from Redis as an ops tool would: a worker run against
 * the sandbox (anvil, LiteSVM) with scripted faults that end rows in every state.
 */
describe('worker jobs: outcomes, failures and step logs in BullMQ', () => {
  let stack: Stack;
  let api: ServeProcess;
  let batchId = '';
  let first: BatchStatus;
  let worker: SpawnedProcess;

  beforeAll(async () => {
    stack = await startStack({
      // No Idempotency-Key replay: a re-send after a lost answer is refused, so it ends needs_review.
      // Intents stay `pending` until a test forces them, so the follower is still polling.
      sandbox: { idempotencyReplay: false, statusStepMs: 3_600_000 },
      env: { HOOK_TOKEN: HOOK, NONCE_SETTLE_WINDOW_MS: '4000' },
    });
    api = await startServe(stack.env);
  }, 120_000);
  afterAll(async () => {
    await api?.stop();
    await stack?.stop();
  });

  const jobOf = (t: TransferView, round = 0) =>
    readJob(
      stack.client,
      stack.env['QUEUE_PREFIX'] as string,
      `transfers-${t.from}`,
      `${batchId}/${t.id}${round ? `/r${round}` : ''}`,
    );

  it('completes every submitted transfer job with its outcome and fails every failed, rejected and needs_review one with its reason; every job has step logs', async () => {
    // The first two estimates and two permits are refused (HTTP 400): two rows `failed`
    // (estimate_refused), two `failed` after the chain showed the nonce unused (refused); one
    // transfer is executed but its answer lost (500), and its re-send refused: `needs_review`.
    await stack.sandbox.admin.configure({
      failBeforeStatus: 400,
      faultScript: [
        // The worker starts after this: its key check (one estimate, before any row) meets the
        // first, a 400, which says the key was accepted.
        { op: 'estimate', fault: 'fail_before' },
        { op: 'estimate', fault: 'fail_before' },
        { op: 'estimate', fault: 'fail_before' },
        { op: 'transfer', fault: 'fail_before' },
        { op: 'transfer', fault: 'fail_before' },
        { op: 'transfer', fault: 'fail_after' },
      ],
    });
    // A 1.00 USDC row: its fee (0.011) is 110 bps, over MAX_FEE_BPS 100: `rejected`.
    const rows: Row[] = [
      ...mixedRows(24, 'jobs'),
      { id: 'jobs-tiny', from: 'BASE', to: 'ARB', amount: '1.00', recipient: randomEvmAddress() },
    ];
    const res = await stack.enqueue(rows);
    expect(res.code).toBe(0);
    batchId = res.batchId;
    worker = stack.startWorker();
    first = await stack.waitComplete(batchId, 150_000);
    expect(first.counts).toMatchObject({ failed: 4, rejected: 1, needs_review: 1, submitted: 19 });

    for (const t of first.transfers) {
      // Final inside its job; BullMQ files the job as finished once the job returns.
      const job = await waitFor(
        `${t.id}'s job to finish`,
        async () => {
          const j = await jobOf(t);
          return j.finished === null ? undefined : j;
        },
        { timeoutMs: 30_000, intervalMs: 20 },
      );
      const what = `${t.id} (${t.state})`;
      expect(job.hash['name'], what).toBe(`${t.from}→${t.to} ${Number(t.amount).toFixed(2)} USDC`);
      expect(JSON.parse(job.hash['data'] ?? '{}'), what).toEqual({ batchId, transferId: t.id });
      const outcome = JSON.parse(job.hash['returnvalue'] ?? 'null') as Record<string, unknown>;
      expect(Object.keys(outcome).sort(), what).toEqual(OUTCOME_KEYS);
      expect(outcome, what).toMatchObject({
        batch_id: batchId,
        transfer_id: t.id,
        line: t.line,
        state: t.state,
        amount: t.amount,
        recipient: t.recipient,
        fee: t.fee,
      });
      // Step logs: dated lines, the last one the transfer's state.
      expect(job.logs.length, what).toBeGreaterThan(0);
      expect(job.logs.length, what).toBeLessThanOrEqual(20);
      for (const line of job.logs) expect(line, what).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z [a-z_]+: /);
      expect(job.logs.at(-1), what).toMatch(new RegExp(` ${t.state}: `));
      expect(JSON.parse(job.hash['progress'] ?? '{}'), what).toMatchObject({ step: t.state, progress: 100 });
      if (t.state === 'submitted') {
        expect(job.finished, what).toBe('completed');
        expect(outcome['intent_id'], what).toBe(t.intent_id);
        expect(t.intent_id, what).toBeTruthy();
        if (t.from === 'SOLANA') {
          expect(outcome['tx_signature'], what).toBe(t.tx_signature);
          expect(outcome['tx_signature'], what).toBeTruthy();
          expect(outcome['owner'], what).toBeNull();
        } else {
          expect(outcome['tx_hash'], what).toBe(t.tx_hash);
          expect(outcome['tx_hash'], what).toMatch(/^0x[0-9a-f]{64}$/);
          expect(outcome['owner'], what).toMatch(/^0x[0-9a-fA-F]{40}$/);
          expect(job.logs.join('\n'), what).toMatch(/permit signed: .* nonce \d+, deadline /);
        }
        expect(job.logs.join('\n'), what).toMatch(/Idempotency-Key /);
        expect(job.logs.join('\n'), what).toMatch(/accepted: intent /);
        // Its record holds short values only (a signature in two parts), so Redis keeps it in the
        // compact encoding (docs/data-model.md "Memory"); it reads back whole (above). Evidence
        // lines, when something unusual happened on the way, may be longer.
        const recordKey = `${stack.env['QUEUE_PREFIX']}:t:${batchId}:${t.id}`;
        const record = await stack.client.hgetall(recordKey);
        const long = Object.entries(record).filter(([f, v]) => v.length > 64 && f !== 'evidence');
        expect(long, what).toEqual([]);
        if (record['evidence'] === undefined) {
          expect(await stack.client.object('ENCODING', recordKey), what).toBe('listpack');
        }
      } else {
        // In BullMQ's failed set, not retried by the queue, the reason naming state, code and message.
        expect(job.finished, what).toBe('failed');
        expect(job.hash['atm'], what).toBe('1');
        expect(job.hash['failedReason'], what).toBe(`${t.state}: ${t.error?.code}: ${t.error?.message}`);
        expect(outcome['error'], what).toEqual(t.error);
      }
    }
    const codes = first.transfers
      .filter((t) => t.state !== 'submitted')
      .map((t) => `${t.state} ${t.error?.code}`);
    expect(codes.sort()).toEqual([
      'failed estimate_refused',
      'failed estimate_refused',
      'failed refused',
      'failed refused',
      'needs_review outcome_unknown',
      'rejected fee_too_high',
    ]);
    // Each transfer that did not end submitted is logged at warn (the worker runs at LOG_LEVEL=warn)
    // with its batch and transfer ids, its code and reason.
    const warnLineOf = (t: TransferView) =>
      worker
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find(
          (l) => l['msg'] === `transfer ${t.state}` && l['batchId'] === batchId && l['transferId'] === t.id,
        );
    for (const t of first.transfers.filter((x) => x.state !== 'submitted')) {
      const line = await waitFor(`the warn line of ${t.id}`, async () => warnLineOf(t), {
        timeoutMs: 10_000,
      });
      expect(line, t.id).toMatchObject({
        level: 40,
        state: t.state,
        code: t.error?.code,
        reason: t.error?.message,
      });
    }
    // The needs_review transfer's delayed settle job says what it waits for, in its name and log.
    const prefix = stack.env['QUEUE_PREFIX'] as string;
    const review = first.transfers.find((t) => t.state === 'needs_review') as TransferView;
    const settleKeys = await waitFor(
      'the settle job',
      async () => {
        const found = (
          await stack.client.keys(`${prefix}:transfers-${review.from}:${batchId}/${review.id}/settle*`)
        ).filter((k) => !k.endsWith(':logs'));
        return found.length > 0 ? found : undefined;
      },
      { timeoutMs: 10_000 },
    );
    expect(settleKeys).toHaveLength(1);
    const settle = await readJob(
      stack.client,
      prefix,
      `transfers-${review.from}`,
      settleKeys[0]!.slice(`${prefix}:transfers-${review.from}:`.length),
    );
    expect(settle.hash['name']).toBe(
      `settle ${review.from}→${review.to} ${Number(review.amount).toFixed(2)} USDC (needs_review: re-check once its permit has expired)`,
    );
    expect(settle.logs[0]).toMatch(
      new RegExp(
        `^\\S+Z wait: transfer ${batchId}/${review.id} needs review \\(its send's answer was lost, so it may have been paid\\); this job looks again at \\S+Z, once its permit's deadline has passed`,
      ),
    );
    // A batch without a callback_url leaves nothing in the callbacks queue.
    expect(await stack.client.keys(`${prefix}:callbacks:${batchId}*`)).toEqual([]);
    expect(await stack.client.zcard(`${prefix}:callbacks:completed`)).toBe(0);

    // The refusal, the doubt and the rejection are explained step by step in the logs.
    const logsOf = async (state: string, code: string) =>
      (
        await jobOf(first.transfers.find((t) => t.state === state && t.error?.code === code) as TransferView)
      ).logs.join('\n');
    expect(await logsOf('rejected', 'fee_too_high')).toMatch(
      /estimate: fee 0\.011 USDC .* 110 bps \(MAX_FEE_BPS 100\)/,
    );
    expect(await logsOf('failed', 'refused')).toMatch(/answer: rejected: refused on its first send/);
    expect(await logsOf('needs_review', 'outcome_unknown')).toMatch(
      /answer: ambiguous: re-sending the same payload/,
    );
  }, 200_000);

  it.skipIf(chromiumMissing() !== undefined)(
    `shows in bull-board what each job pays and why a payout failed (screenshots in test-output/dashboard)${chromiumMissing() ? ` — skipped: ${chromiumMissing()}` : ''}`,
    async () => {
      const dir = screenshotDir('dashboard');
      const { context, close } = await launchBrowser({
        headers: { authorization: `Bearer ${HOOK}` },
        viewport: { width: 1400, height: 1000 },
      });
      try {
        // Only the API's own address: bull-board's page also asks for web fonts on the internet.
        await context.route(
          (url) => !url.href.startsWith(api.url),
          (route) => route.abort(),
        );
        const page = await context.newPage();
        const open = async (path: string, text: string, file: string) => {
          await page.goto(`${api.url}/dashboard${path}`, { waitUntil: 'networkidle' });
          try {
            await page.getByText(text, { exact: false }).first().waitFor({ timeout: 20_000 });
          } catch (err) {
            await page.screenshot({ path: join(dir, `timeout-${file}`), fullPage: true });
            throw err;
          }
          await page.screenshot({ path: join(dir, file), fullPage: true });
          return await page.locator('body').innerText();
        };
        // The overview: a card per queue with its counts, the failed payouts counted in red.
        const list = await open('/', ' Jobs', 'queues.png');
        expect(list).toMatch(/transfers-BASE[\s\S]*FAILED/);
        const pick = (state: string) =>
          first.transfers.find((t) => t.state === state && t.from !== 'SOLANA') as TransferView;
        const jobPage = (t: TransferView) =>
          `/queue/${encodeURIComponent(`transfers-${t.from}`)}/${encodeURIComponent(`${batchId}/${t.id}`)}`;
        const nameOf = (t: TransferView) => `${t.from}→${t.to} ${Number(t.amount).toFixed(2)} USDC`;
        const submitted = pick('submitted');
        const failedQueue = await open(
          `/queue/transfers-${submitted.from}?status=completed`,
          nameOf(submitted),
          'queue-completed.png',
        );
        expect(failedQueue).toContain(nameOf(submitted));
        const okText = await open(jobPage(submitted), nameOf(submitted), 'job-submitted.png');
        expect(okText).toContain(submitted.id);
        for (const [state, file] of [
          ['failed', 'job-failed.png'],
          ['needs_review', 'job-needs-review.png'],
        ] as const) {
          const t = pick(state);
          const text = await open(jobPage(t), `${state}: ${t.error?.code}`, file);
          expect(text).toContain(nameOf(t));
          expect(text).toContain(`${state}: ${t.error?.code}: `);
        }
        // The step logs of the needs_review job: each call, the lost answer, the refused re-send.
        await page.getByText('Logs', { exact: true }).click();
        await page.getByText('answer: ambiguous').first().waitFor({ timeout: 20_000 });
        // The log panel scrolls inside the card: let it and the card grow, so the screenshot holds
        // every line. (Text, not a function: these tests are compiled without the DOM's types.)
        await page.evaluate(`for (let el = document.querySelector('[class^="preWrapper"]'); el && el !== document.body; el = el.parentElement) {
          Object.assign(el.style, { maxHeight: 'none', height: 'auto', overflow: 'visible' });
        }`);
        // bull-board re-fetches the open tab every few seconds and shows it empty while it does:
        // read the page until the log lines are on it (a re-fetch can fall between two reads).
        const body = () => page.locator('body').innerText();
        await expect.poll(body, { timeout: 20_000 }).toMatch(/permit signed: /);
        await page.screenshot({ path: join(dir, 'job-needs-review-logs.png'), fullPage: true });
        expect(await body()).toMatch(/needs_review: outcome_unknown: /);
      } finally {
        await close();
      }
    },
    60_000,
  );

  it('keeps every secret out of the job hashes, logs and events: keys, the API key, permit signatures, signed transactions', async () => {
    const prefix = stack.env['QUEUE_PREFIX'] as string;
    const text = await dumpQueueKeys(stack.client, prefix, [...QUEUES, 'intents', 'callbacks']);
    expect(text.length).toBeGreaterThan(10_000);
    const keypair = JSON.parse(readFileSync(stack.env['SOLANA_KEYPAIR_FILE'] as string, 'utf8')) as number[];
    const secrets: [string, string][] = [
      ['EVM key', TEST_EVM_KEY.replace(/^0x/, '').toLowerCase()],
      ['API key', stack.env['TRANSFER_API_KEY'] as string],
      ['Solana keypair (JSON)', JSON.stringify(keypair)],
      ['Solana secret (base58)', encodeBase58(Uint8Array.from(keypair))],
      ['Solana seed (hex)', Buffer.from(keypair.slice(0, 32)).toString('hex')],
    ];
    // Every payload the worker signed for this batch, as the service received and executed it (a
    // submitted transfer's record no longer keeps its payload), and those the records still keep.
    let permits = 0;
    let signedTxs = 0;
    const intents = new Set(first.transfers.map((t) => t.intent_id).filter((id) => id !== null));
    for (const e of (await stack.sandbox.admin.ledger()).filter((e) => intents.has(e.intent_id))) {
      if (e.kind === 'evm') {
        const sig = e.signed_payload.replace(/^0x/, '').toLowerCase();
        secrets.push([`${e.intent_id} permit signature`, sig]);
        secrets.push([`${e.intent_id} permit s`, sig.slice(64, 128)]);
        permits++;
      } else {
        secrets.push([`${e.intent_id} signed transaction`, e.signed_payload]);
        secrets.push([`${e.intent_id} signed transaction (start)`, e.signed_payload.slice(0, 64)]);
        signedTxs++;
      }
    }
    for (const t of first.transfers) {
      const rec = await stack.client.hgetall(`${prefix}:t:${batchId}:${t.id}`);
      if (rec['permit']) {
        const permit = JSON.parse(rec['permit']) as { signature: string; r: string; s: string };
        secrets.push([`${t.id} permit signature`, permit.signature.replace(/^0x/, '').toLowerCase()]);
        secrets.push([`${t.id} permit s`, permit.s.replace(/^0x/, '').toLowerCase()]);
        permits++;
      }
      if (rec['solana_signed']) {
        secrets.push([`${t.id} signed transaction`, rec['solana_signed']]);
        secrets.push([`${t.id} signed transaction (start)`, rec['solana_signed'].slice(0, 64)]);
        signedTxs++;
      }
    }
    expect(permits).toBeGreaterThan(5);
    expect(signedTxs).toBeGreaterThan(3);
    const lower = text.toLowerCase();
    for (const [what, secret] of secrets) {
      expect(secret.length, what).toBeGreaterThan(12);
      const hay = /^[0-9a-f]+$/.test(secret) ? lower : text;
      expect(hay.includes(secret), `${what} found in a job`).toBe(false);
    }
  });

  it('retry re-sends the failed rows in jobs of their own round, pays each once, and the earlier failed jobs stay as they were', async () => {
    await stack.sandbox.admin.configure({ faultScript: [], failBeforeStatus: 503 });
    const failedBefore = first.transfers.filter((t) => t.state === 'failed');
    const retried = await runCli(['retry', batchId], stack.env);
    expect(retried.code, retried.stderr).toBe(0);
    const done = await stack.waitComplete(batchId, 120_000);
    expect(done.counts).toMatchObject({ submitted: 23, failed: 0, rejected: 1, needs_review: 1 });
    const { paidTwice, problems } = checkLedger(done, await stack.ledger());
    expect(paidTwice).toEqual([]);
    expect(problems).toEqual([]);
    for (const before of failedBefore) {
      const t = done.transfers.find((d) => d.id === before.id) as TransferView;
      const old: StoredJob = await jobOf(before);
      expect(old.finished, t.id).toBe('failed');
      expect(old.hash['failedReason'], t.id).toBe(`failed: ${before.error?.code}: ${before.error?.message}`);
      const again = await jobOf(t, 1);
      expect(again.finished, t.id).toBe('completed');
      expect(JSON.parse(again.hash['returnvalue'] ?? '{}'), t.id).toMatchObject({
        state: 'submitted',
        intent_id: t.intent_id,
        error: null,
      });
      expect(again.logs.length, t.id).toBeGreaterThan(0);
    }
  }, 150_000);

  it('fails the follower job of an intent that ended failed after submit, and counts it', async () => {
    const doc = await stack.status(batchId);
    // A BASE transfer submitted by its first round's job (a row the retry test re-sent was submitted
    // by its round-1 job, whose result is the one the follower keeps current).
    let victim: TransferView | undefined;
    for (const t of doc.transfers.filter((t) => t.state === 'submitted' && t.from === 'BASE')) {
      const first = await jobOf(t);
      if ((JSON.parse(first.hash['returnvalue'] ?? '{}') as { state?: string }).state === 'submitted') {
        victim = t;
        break;
      }
    }
    if (!victim) throw new Error('no BASE transfer submitted by its first job');
    await stack.sandbox.admin.setIntentStatus(victim.intent_id as string, 'failed');
    const prefix = stack.env['QUEUE_PREFIX'] as string;
    const jobId = `${batchId}/${victim.id}/${victim.intent_id}`;
    const job = await waitFor(
      'the follower to fail the job of the failed intent',
      async () => {
        const j = await readJob(stack.client, prefix, 'intents', jobId);
        return j.finished === 'failed' ? j : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    expect(job.hash['failedReason']).toMatch(
      new RegExp(
        `^intent_failed: intent ${victim.intent_id} of transfer ${batchId}/${victim.id} .* ended failed after it was submitted`,
      ),
    );
    expect(JSON.parse(job.hash['returnvalue'] ?? '{}')).toMatchObject({
      intent_status: 'failed',
      ended: 'final',
    });
    expect(job.logs.join('\n')).toMatch(/is failed/);
    expect((await stack.status(batchId)).transfers.find((t) => t.id === victim.id)?.intent_status).toBe(
      'failed',
    );
    // The transfer job's log says it as one more line; its result is the transfer as the job left it.
    const transferJob = await jobOf(victim);
    expect(JSON.parse(transferJob.hash['returnvalue'] ?? '{}')).toMatchObject({
      state: 'submitted',
      intent_id: victim.intent_id,
    });
    expect(transferJob.logs.at(-1)).toMatch(/ intent failed$/);
    const metrics = await scrape((text) => /^usdc_batch_intents_failed_total\{chain="BASE"\} 1$/m.test(text));
    expect(metrics).toMatch(/^usdc_batch_intents_failed_total\{chain="BASE"\} 1$/m);
  }, 120_000);

  it('exports on /metrics what the queue shows: failed jobs, failures by code and chain, time to final, waits, workers alive', async () => {
    // Workers flush their counts once a second: until all 29 transfers made final are counted.
    const finalCount = (t: string) =>
      [...t.matchAll(/^usdc_batch_transfer_final_seconds_count\{[^}]*\} (\d+)$/gm)].reduce(
        (s, m) => s + Number(m[1]),
        0,
      );
    const text = await scrape((t) => /^usdc_batch_workers [1-9]/m.test(t) && finalCount(t) === 29);
    const failedJobs = QUEUES.map((q) =>
      Number(
        new RegExp(`^usdc_batch_queue_jobs\\{queue="${q}",state="failed"\\} (\\d+)$`, 'm').exec(text)?.[1] ??
          0,
      ),
    );
    // The six transfers that ended failed, rejected or needs_review in the first round are failed
    // jobs (kept a week), and so is nothing else.
    expect(
      failedJobs.reduce((a, b) => a + b, 0),
      text
        .split('\n')
        .filter((l) => l.includes('state="failed"'))
        .join('\n'),
    ).toBe(6);
    const failures = [
      ...text.matchAll(
        /^usdc_batch_transfer_failures_total\{chain="(\w+)",state="(\w+)",code="(\w+)"\} (\d+)$/gm,
      ),
    ];
    const byCode = new Map<string, number>();
    for (const [, , state, code, n] of failures)
      byCode.set(`${state} ${code}`, (byCode.get(`${state} ${code}`) ?? 0) + Number(n));
    expect(Object.fromEntries(byCode)).toEqual({
      'failed estimate_refused': 2,
      'failed refused': 2,
      'needs_review outcome_unknown': 1,
      'rejected fee_too_high': 1,
    });
    const finals = [
      ...text.matchAll(/^usdc_batch_transfer_final_seconds_count\{chain="\w+",state="(\w+)"\} (\d+)$/gm),
    ];
    const total = (state: string) =>
      finals.filter((m) => m[1] === state).reduce((s, m) => s + Number(m[2]), 0);
    // 19 submitted in the first round and 4 after the retry; the other states once each.
    expect(total('submitted')).toBe(23);
    expect(total('failed')).toBe(4);
    // Waits by reason: a bounded set of kinds (which ones a run meets depends on its timing).
    expect(text).toMatch(/^# TYPE usdc_batch_waits_total counter$/m);
    const kinds = [...text.matchAll(/^usdc_batch_waits_total\{chain="\w+",kind="(\w+)"\} \d+$/gm)].map(
      (m) => m[1],
    );
    const known = [
      'lock',
      'paused',
      'shutdown',
      'no_key',
      'nonce_lease',
      'nonce_pool',
      'nonce_chain',
      'daily_cap',
      'balance',
      'retry',
      'rate_limit',
      'settle',
      'replicas',
      'screening',
    ];
    expect(kinds.filter((k) => !known.includes(k as string))).toEqual([]);
    console.log(`waits seen: ${kinds.join(', ') || 'none'}`);
    expect(text).toMatch(/^usdc_batch_daily_cap_micro_usdc -1$/m);
  });

  it('Grafana and the alert rules use only series /metrics exports, and the rules file parses', async () => {
    const text = await scrape(() => true);
    const exported = exportedSeries(text);
    const dashboard = JSON.parse(readFileSync(join(REPO_ROOT, 'deploy/grafana/usdc-batch.json'), 'utf8')) as {
      panels: { title: string; targets?: { expr: string }[] }[];
    };
    const exprs: [string, string][] = dashboard.panels.flatMap((p) =>
      (p.targets ?? []).map((t): [string, string] => [`panel "${p.title}"`, t.expr]),
    );
    expect(exprs.length).toBeGreaterThan(12);
    const rules = parseYaml(readFileSync(join(REPO_ROOT, 'deploy/prometheus/alerts.yml'), 'utf8')) as {
      groups: {
        name: string;
        rules: { alert: string; expr: string; labels: object; annotations: object }[];
      }[];
    };
    const alerts = rules.groups.flatMap((g) => g.rules);
    expect(alerts.map((r) => r.alert).sort()).toEqual([
      'UsdcBatchFailureRate',
      'UsdcBatchIntentFailedAfterSubmit',
      'UsdcBatchNeedsReview',
      'UsdcBatchNoWorkerAlive',
      'UsdcBatchOwnerGasLow',
      'UsdcBatchQueueNotDraining',
      'UsdcBatchScreeningStale',
      'UsdcBatchServiceRateLimiting',
      'UsdcBatchTreasuryBelowMin',
    ]);
    for (const r of alerts) {
      expect(typeof r.expr, r.alert).toBe('string');
      expect(r.annotations, r.alert).toHaveProperty('summary');
      exprs.push([`alert ${r.alert}`, r.expr]);
    }
    for (const [where, expr] of exprs) {
      const names = [...expr.matchAll(/\b(usdc_batch_[a-z0-9_]+)/g)].map((m) => m[1] as string);
      expect(names.length, `${where}: ${expr}`).toBeGreaterThan(0);
      for (const name of names) {
        expect(exported.has(name), `${where} uses ${name}, which /metrics does not export`).toBe(true);
      }
      // Label matchers name labels the series carry.
      for (const m of expr.matchAll(/\b(usdc_batch_[a-z0-9_]+)\{([^}]*)\}/g)) {
        for (const label of [...(m[2] as string).matchAll(/(\w+)\s*(?:=~|!=|=)/g)].map(
          (x) => x[1] as string,
        )) {
          expect(exported.get(m[1] as string)?.has(label), `${where}: ${m[1]} has no label ${label}`).toBe(
            true,
          );
        }
      }
    }
  });

  it('the sweeper re-adds a lost job from the store and leaves a held batch alone; a daily-cap wait keeps its job, logged once', async () => {
    const prefix = stack.env['QUEUE_PREFIX'] as string;
    await worker.stop();
    const rows = (tag: string, n: number): Row[] =>
      Array.from({ length: n }, (_, i) => ({
        id: `${tag}-${i}`,
        from: 'BASE',
        to: 'ARB',
        amount: '20',
        recipient: randomEvmAddress(),
      }));
    const lost = await stack.enqueue(rows('lost', 3));
    const held = await stack.enqueue(rows('held', 2));
    expect([lost.code, held.code]).toEqual([0, 0]);
    // A job lost (removed by hand, or never added by a command that crashed), and a batch held for
    // approval whose rows must have no job: both untouched for long enough to be swept.
    const queue = new Queue('transfers-BASE', { connection: { url: stack.redis.url }, prefix });
    try {
      expect(await queue.remove(`${lost.batchId}/lost-0`)).toBe(1);
      for (const i of [0, 1]) await queue.remove(`${held.batchId}/held-${i}`);
    } finally {
      await queue.close();
    }
    await stack.client.hset(`${prefix}:batch:${held.batchId}`, 'held', '1', 'held_reason', 'test: held');
    expect(await jobsOfBatch(stack.client, prefix, held.batchId)).toEqual([]);
    const longAgo = String(Date.now() - 5 * 60_000);
    for (const id of ['lost-0', 'lost-1', 'lost-2', 'held-0', 'held-1']) {
      const b = id.startsWith('lost') ? lost.batchId : held.batchId;
      await stack.client.hset(`${prefix}:t:${b}:${id}`, 'updated_at', longAgo);
    }
    // Their batches quiet too: a batch that changed within a minute is busy, and a sweeper's first
    // sight of a busy batch only starts its clock (sweeper.ts readNow).
    for (const b of [lost.batchId, held.batchId]) {
      await stack.client.hset(`${prefix}:batch:${b}`, 'updated_at', longAgo);
    }
    // A worker under a 50 USDC daily cap: it sweeps at start, then two rows of 20 go and one waits.
    worker = stack.startWorker({ MAX_DAILY_USDC: '50' });
    const doc = await waitFor(
      'two paid and one waiting for the daily cap',
      async () => {
        const d = await stack.status(lost.batchId);
        return d.counts.submitted === 2 &&
          d.transfers.some((t) => t.wait_reason?.startsWith('MAX_DAILY_USDC'))
          ? d
          : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    const waiting = doc.transfers.find((t) => t.state === 'queued') as TransferView;
    const paid = doc.transfers.filter((t) => t.state === 'submitted');
    expect(checkLedger({ ...doc, transfers: paid }, await stack.ledger())).toEqual({
      paidTwice: [],
      problems: [],
    });
    // The lost job was added again (round 0: its id was free), and ran.
    // Its step log is written behind the run (job-reporter.ts: the store's write comes first, the log's
    // lines follow), so the status document can say where it is before its log does.
    const readded = await waitFor(
      'the re-added job’s step log',
      async () => {
        const j = await readJob(stack.client, prefix, 'transfers-BASE', `${lost.batchId}/lost-0`);
        return j.logs.length > 0 ? j : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 50 },
    );
    expect(readded.hash['name']).toBe('BASE→ARB 20.00 USDC');
    // The waiting row's job is delayed (live), with the wait logged once however often it looked again.
    // Its wait reason is saved before its run hands the job back: the job reaches the delayed set
    // just after (a moment longer on a busy machine).
    const delayedAt = () =>
      stack.client.zscore(`${prefix}:transfers-BASE:delayed`, `${lost.batchId}/${waiting.id}`);
    await waitFor('the waiting row’s job delayed', async () => (await delayedAt()) !== null, {
      timeoutMs: 30_000,
      intervalMs: 50,
    });
    const job = await readJob(stack.client, prefix, 'transfers-BASE', `${lost.batchId}/${waiting.id}`);
    expect(job.finished).toBeNull();
    expect(await delayedAt()).not.toBeNull();
    expect(JSON.parse(job.hash['progress'] ?? '{}')).toMatchObject({ step: 'wait' });
    expect(job.logs.filter((l) => / wait: MAX_DAILY_USDC: 40\.00 of 50\.00 USDC/.test(l))).toHaveLength(1);
    // The held batch: still no job, still queued.
    expect(await jobsOfBatch(stack.client, prefix, held.batchId)).toEqual([]);
    expect((await stack.status(held.batchId)).counts.queued).toBe(2);
    const text = await scrape((t) =>
      /^usdc_batch_waits_total\{chain="BASE",kind="daily_cap"\} [1-9]/m.test(t),
    );
    expect(text).toMatch(/^usdc_batch_daily_spend_micro_usdc 40000000$/m);
  }, 120_000);

  it('keeps a finished transfer job a day, a failed one a week: older ones are trimmed as jobs finish, with no copy of the rule in every job', async () => {
    const prefix = stack.env['QUEUE_PREFIX'] as string;
    const q = `${prefix}:transfers-POLYGON`;
    // Finished jobs of an earlier day, as BullMQ leaves them: a hash and a place in a finished set
    // scored by when the job finished.
    const hours = (h: number) => Date.now() - h * 3600_000;
    const seeded = {
      'old-done': hours(25),
      'day-done': hours(23),
      'old-failed': hours(8 * 24),
      'week-failed': hours(6 * 24),
    };
    for (const [id, at] of Object.entries(seeded)) {
      await stack.client.hset(
        `${q}:${id}`,
        'name',
        'POLYGON→ARB 5.00 USDC',
        'data',
        '{}',
        'opts',
        '{}',
        'timestamp',
        String(at),
        'finishedOn',
        String(at),
      );
      await stack.client.zadd(`${q}:${id.endsWith('failed') ? 'failed' : 'completed'}`, at, id);
    }
    await worker.stop();
    await stack.sandbox.admin.configure({
      failBeforeStatus: 400,
      // The first for the starting worker's key check, the second for a row.
      faultScript: [
        { op: 'estimate', fault: 'fail_before' },
        { op: 'estimate', fault: 'fail_before' },
      ],
    });
    const rows: Row[] = ['keep-0', 'keep-1'].map((id) => ({
      id,
      from: 'POLYGON',
      to: 'ARB',
      amount: '5',
      recipient: randomEvmAddress(),
    }));
    const res = await stack.enqueue(rows);
    expect(res.code).toBe(0);
    worker = stack.startWorker();
    const done = await stack.waitComplete(res.batchId, 60_000);
    expect(done.counts).toMatchObject({ submitted: 1, failed: 1 });
    for (const t of done.transfers) {
      // The transfer is final inside its job; BullMQ files the job as finished once it returns.
      const job = await waitFor(
        `${t.id}'s job to finish`,
        async () => {
          const j = await readJob(stack.client, prefix, 'transfers-POLYGON', `${res.batchId}/${t.id}`);
          return j.finished === null ? undefined : j;
        },
        { timeoutMs: 30_000, intervalMs: 20 },
      );
      expect(job.finished, t.id).toBe(t.state === 'submitted' ? 'completed' : 'failed');
      // How BullMQ retries it, and nothing more: how long it is kept is the workers' rule.
      expect(Object.keys(JSON.parse(job.hash['opts'] ?? '{}')).sort(), t.id).toEqual([
        'attempts',
        'backoff',
        'jobId',
      ]);
    }
    // The finishing jobs trimmed what was past its time, and only that.
    const left = async (id: string) => [
      await stack.client.exists(`${q}:${id}`),
      (await stack.client.zscore(`${q}:completed`, id)) ?? (await stack.client.zscore(`${q}:failed`, id)),
    ];
    expect(await left('old-done')).toEqual([0, null]);
    expect(await left('old-failed')).toEqual([0, null]);
    expect((await left('day-done'))[0]).toBe(1);
    expect((await left('week-failed'))[0]).toBe(1);
  }, 120_000);

  /** `/metrics`, again until `ready` says so (workers flush their counts once a second). */
  async function scrape(ready: (text: string) => boolean): Promise<string> {
    return await waitFor(
      '/metrics to show it',
      async () => {
        const res = await api.call('/metrics', { token: HOOK });
        const text = await res.text();
        return res.status === 200 && ready(text) ? text : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 250 },
    );
  }
});

/**
 * The series a scrape exports, with the labels seen on each: every sample's name, and for every
 * family declared (`# TYPE`) its name — a histogram's `_bucket`, `_sum` and `_count` too — so a
 * family with no sample yet still counts as exported.
 */
function exportedSeries(text: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const add = (name: string, labels: string[] = []) => {
    const set = out.get(name) ?? new Set<string>();
    for (const l of labels) set.add(l);
    out.set(name, set);
  };
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\w+)$/.exec(line);
    if (type) {
      add(type[1] as string);
      if (type[2] === 'histogram') for (const s of ['_bucket', '_sum', '_count']) add(`${type[1]}${s}`);
      continue;
    }
    const sample = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})? /.exec(line);
    if (sample)
      add(
        sample[1] as string,
        [...(sample[2] ?? '').matchAll(/(\w+)="/g)].map((m) => m[1] as string),
      );
  }
  // A histogram's labels are its series' labels.
  for (const [name, labels] of out) {
    const base = name.replace(/_(bucket|sum|count)$/, '');
    if (base !== name && out.has(base)) for (const l of labels) out.get(base)?.add(l);
  }
  return out;
}
