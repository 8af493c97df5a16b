import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatUsdc } from '../../src/domain/money.ts';
import type { BatchStatus } from '../../src/present/batch-status.ts';
import { chromiumMissing, launchBrowser, screenshotDir, type Browser } from '../helpers/browser.ts';
import { runCli, waitFor } from '../helpers/cli.ts';
import { startStack, type Stack } from '../helpers/e2e.ts';
import { mixedRows, randomEvmAddress, TEST_EVM_ADDRESS, type Row } from '../helpers/fixtures.ts';
import { startServe, type ServeProcess } from '../helpers/serve.ts';

const HOOK = 'hook-token-ui-browser-0123456789';
const missing = chromiumMissing();
if (missing) console.warn(`skipping the batch pages in a real browser: ${missing}`);

const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };
const HOSTILE_MEMO = '<script>alert(1)</script><img src=x onerror=alert(2)>';

/**
 * The batch pages as a person sees them: the real `serve`, a worker and the sandbox on its local
 * chains, and headless Chromium reading what is rendered. Screenshots go to test-output/ui/.
 */
describe.skipIf(missing !== undefined)('batch pages in a real browser', () => {
  let stack: Stack;
  let serve: ServeProcess;
  let desktop: Browser;
  let batchId: string;
  let doc: BatchStatus;
  const shots = screenshotDir('ui');
  const dialogs: string[] = [];

  beforeAll(async () => {
    stack = await startStack();
    stack.startWorker();
    serve = await startServe({ ...stack.env, HOOK_TOKEN: HOOK });
    // Eight payments, one below the service's fee (its estimate is refused: it ends `failed`), one
    // whose memo is markup that must stay text.
    const rows: Row[] = [
      ...mixedRows(7, 'ui'),
      { id: 'ui-tiny', from: 'BASE', to: 'ARB', amount: '0.000001', recipient: randomEvmAddress() },
    ];
    rows[1] = { ...rows[1]!, memo: HOSTILE_MEMO };
    const enqueued = await stack.enqueue(rows, ['--batch-id', 'ui-payroll-1']);
    batchId = enqueued.batchId;
    doc = await stack.waitComplete(batchId, 90_000);
    desktop = await launchBrowser({ headers: { authorization: `Bearer ${HOOK}` }, viewport: DESKTOP });
  });
  afterAll(async () => {
    await desktop?.close();
    await serve?.stop();
    await stack?.stop();
  });

  async function open(browser: Browser, path: string): Promise<Page> {
    const page = await browser.context.newPage();
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    const res = await page.goto(`${serve.url}${path}`);
    expect(res?.status(), path).toBe(200);
    return page;
  }

  const countOn = async (page: Page, state: string) =>
    Number(await page.locator(`ul[data-filter] [data-count="${state}"]`).textContent());

  it('lists the batch on /ui with its progress, totals and status', async () => {
    const page = await open(desktop, '/ui');
    const row = page.locator(`tr[data-batch="${batchId}"]`);
    // A fresh page's first query can take over a second on a busy machine.
    await expect.poll(() => row.count(), { timeout: 15_000 }).toBe(1);
    expect(await row.locator('td[data-label="transfers"]').textContent()).toMatch(
      new RegExp(`^${doc.counts.submitted} submitted, ${doc.counts.failed} failed`),
    );
    expect(await row.locator('td[data-label="amount"]').textContent()).toBe(doc.totals.amount);
    expect(await row.locator('td[data-label="paid"]').textContent()).toBe(doc.totals.paid.amount);
    expect(await row.locator('[data-flag="complete"]').textContent()).toBe('complete');
    // Complete is not good news: the failed row is what the outcome badge says, in the failed tone.
    const outcome = row.locator('[data-flag="outcome"]');
    expect((await outcome.textContent())?.trim()).toBe(`${doc.counts.failed} failed`);
    expect(await outcome.getAttribute('data-tone')).toBe('failed');
    await page.screenshot({ path: join(shots, 'batches-desktop.png'), fullPage: true });
    await page.close();
  });

  it('shows the batch: counts and a row intent id as the status document has them, markup as text', async () => {
    const page = await open(desktop, `/ui/batches/${batchId}`);
    expect(await page.locator('[data-batch-id]').textContent()).toBe(batchId);
    expect(await countOn(page, 'all')).toBe(8);
    expect(await countOn(page, 'submitted')).toBe(doc.counts.submitted);
    expect(await countOn(page, 'failed')).toBe(doc.counts.failed);
    expect(doc.counts.submitted).toBe(7);

    const first = doc.transfers.find((t) => t.state === 'submitted')!;
    const shownIntent = await page.locator(`tr[data-transfer="${first.id}"] [data-intent-id]`).textContent();
    expect(shownIntent).toBe(first.intent_id);
    expect(shownIntent).toMatch(/\S{8,}/);
    expect(await page.locator(`tr[data-transfer="${first.id}"] td[data-label="state"]`).textContent()).toBe(
      'submitted',
    );
    expect(await page.locator('[data-total="paid"]').textContent()).toBe(`${doc.totals.paid.amount} USDC`);

    // The memo is shown as the text it is; nothing of it ran or became an element.
    expect(await page.locator('tr[data-transfer="ui-1"] [data-memo]').textContent()).toBe(HOSTILE_MEMO);
    expect(await page.locator('main script, main img').count()).toBe(0);
    expect(dialogs).toEqual([]);

    // The failed row says why.
    expect(
      await page.locator('tr[data-transfer="ui-tiny"] td[data-label="error / waiting for"]').textContent(),
    ).toMatch(/\S/);
    // …and keeps its evidence folded under the error (the decision), as the status document has it;
    // a plain submitted row has none.
    const tiny = doc.transfers.find((t) => t.id === 'ui-tiny')!;
    expect(tiny.evidence).toEqual([expect.stringMatching(/ failed: estimate_refused: /)]);
    expect(await page.locator('tr[data-transfer="ui-tiny"] [data-evidence] li').allTextContents()).toEqual(
      tiny.evidence,
    );
    expect(await page.locator(`tr[data-transfer="${first.id}"] [data-evidence]`).count()).toBe(0);
    expect(await page.locator('a[data-link="export"]').getAttribute('href')).toBe(
      `/ui/batches/${batchId}/export.csv`,
    );
    expect(
      Number(await page.evaluate('document.documentElement.scrollWidth - window.innerWidth')),
    ).toBeLessThanOrEqual(0);
    await page.screenshot({ path: join(shots, 'batch-desktop.png'), fullPage: true });
    await page.close();
  });

  it('follows the state filter to the failed rows only', async () => {
    const page = await open(desktop, `/ui/batches/${batchId}`);
    await page.locator('ul[data-filter] a[data-state="failed"]').click();
    await page.waitForURL(/state=failed/);
    expect(await page.locator('ul[data-filter] [aria-current="page"]').getAttribute('data-state')).toBe(
      'failed',
    );
    const states = await page.locator('tr[data-transfer] td[data-label="state"]').allTextContents();
    expect(states).toEqual(Array(doc.counts.failed).fill('failed'));
    expect(await page.locator('tr[data-transfer]').getAttribute('data-transfer')).toBe('ui-tiny');
    await page.screenshot({ path: join(shots, 'batch-failed-desktop.png'), fullPage: true });
    await page.close();
  });

  it('pages through the rows with the line cursor', async () => {
    const page = await open(desktop, `/ui/batches/${batchId}?limit=3`);
    const ids = async () =>
      await page
        .locator('tr[data-transfer]')
        .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-transfer')));
    const seen: (string | null)[] = [...(await ids())];
    for (let i = 0; i < 5 && (await page.locator('a[data-link="next"]').count()) > 0; i++) {
      await page.locator('a[data-link="next"]').click();
      await page.waitForURL(/cursor=/);
      seen.push(...(await ids()));
    }
    expect(seen).toEqual(doc.transfers.map((t) => t.id));
    expect(await page.locator('a[data-link="first"]').count()).toBe(1);
  });

  it('opens the export and the audit entries from the page', async () => {
    const page = await open(desktop, `/ui/batches/${batchId}`);
    await page.locator('a[data-link="audit"]').click();
    await page.waitForURL(/\/audit$/);
    expect(await page.locator('tr[data-action="enqueue"]').count()).toBe(1);
    await page.screenshot({ path: join(shots, 'audit-desktop.png'), fullPage: true });
    const csv = await page.request.get(`${serve.url}/ui/batches/${batchId}/export.csv`);
    expect(csv.status()).toBe(200);
    expect((await csv.text()).split('\r\n').filter(Boolean)).toHaveLength(9);
    await page.close();
  });

  it('is readable on a phone: nothing wider than the screen', async () => {
    const phone = await launchBrowser({
      headers: { authorization: `Bearer ${HOOK}` },
      viewport: PHONE,
      isMobile: true,
    });
    try {
      for (const [path, name] of [
        ['/ui', 'batches-phone.png'],
        [`/ui/batches/${batchId}`, 'batch-phone.png'],
      ] as const) {
        const page = await open(phone, path);
        const overflow = Number(
          await page.evaluate('document.documentElement.scrollWidth - window.innerWidth'),
        );
        expect(overflow, `${path} is ${overflow}px wider than the phone`).toBeLessThanOrEqual(0);
        await page.screenshot({ path: join(shots, name) });
        await page.screenshot({ path: join(shots, name.replace('.png', '-full.png')), fullPage: true });
        await page.close();
      }
    } finally {
      await phone.close();
    }
  });

  it('lets a browser log in with HTTP Basic (the hook token as password) and refuses it without', async () => {
    // A browser without credentials is asked to log in (headless Chromium cannot show the prompt).
    const anonymous = await launchBrowser();
    try {
      const refused = await anonymous.context.request.get(`${serve.url}/ui`);
      expect(refused.status()).toBe(401);
      expect(refused.headers()['www-authenticate']).toMatch(/^Basic /);
    } finally {
      await anonymous.close();
    }
    const login = await launchBrowser({ credentials: { username: 'ops', password: HOOK } });
    try {
      const page = await open(login, `/ui/batches/${batchId}`);
      expect(await countOn(page, 'submitted')).toBe(doc.counts.submitted);
    } finally {
      await login.close();
    }
  });

  it('shows the batch settled once its intents are final, and stops reloading itself', async () => {
    const settling = await open(desktop, `/ui/batches/${batchId}`);
    const before = await stack.status(batchId);
    if (before.settled !== true) {
      // Complete but not settled: the page reloads itself until the money has arrived.
      expect(await settling.locator('meta[http-equiv="refresh"]').count()).toBe(1);
    }
    await settling.close();
    // The worker first asks about an intent 15 s after its send; the sandbox completes it in 6 s.
    await waitFor('the batch to settle', async () => (await stack.status(batchId)).settled === true, {
      timeoutMs: 90_000,
      intervalMs: 500,
    });
    const page = await open(desktop, `/ui/batches/${batchId}`);
    expect((await page.locator('[data-flag="settled"]').textContent())?.trim()).toBe('intents settled');
    // Settled speaks of the intents only: the batch still reads as having a failed row.
    expect((await page.locator('[data-flag="outcome"]').textContent())?.trim()).toBe('1 failed');
    expect(await page.locator('meta[http-equiv="refresh"]').count()).toBe(0);
    const first = doc.transfers.find((t) => t.state === 'submitted')!;
    expect(await page.locator(`tr[data-transfer="${first.id}"] [data-intent-status]`).textContent()).toBe(
      'complete',
    );
    await page.screenshot({ path: join(shots, 'batch-settled-desktop.png'), fullPage: true });
    await page.close();
  });

  it('renders bull-board on /dashboard under its CSP: its own scripts, styles and data load, nothing from elsewhere', async () => {
    const page = await desktop.context.newPage();
    const refused: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) refused.push(m.text());
    });
    const res = await page.goto(`${serve.url}/dashboard`);
    expect(res?.status()).toBe(200);
    expect(res?.headers()['content-security-policy']).toMatch(/frame-ancestors 'none'/);
    expect(res?.headers()['x-frame-options']).toBe('DENY');
    // The overview (drawn by its scripts from its API) lists the queues; a queue's page lists the
    // batch's jobs by what they pay.
    await page.getByText('transfers-BASE').first().waitFor({ timeout: 20_000 });
    const paid = doc.transfers.find((t) => t.state === 'submitted' && t.from === 'BASE')!;
    await page.goto(`${serve.url}/dashboard/queue/transfers-BASE?status=completed`);
    await page
      .getByText(`${paid.from}→${paid.to} ${Number(paid.amount).toFixed(2)} USDC`)
      .first()
      .waitFor({ timeout: 20_000 });
    // Its stylesheet applies (text, not a function: these tests are compiled without the DOM's types).
    expect(
      await page.evaluate(
        `[...document.styleSheets].some((s) => (s.href ?? '').includes('/dashboard/static/css/'))`,
      ),
    ).toBe(true);
    await page.screenshot({ path: join(shots, 'dashboard-queue.png'), fullPage: true });
    // What the policy refuses is cosmetic: inline styles (the loading placeholder's, the colours of
    // the Redis icon's SVG) and the Google web fonts (the system font is used). Never a script, a
    // call to its API, an image or a stylesheet of its own.
    expect(refused.length).toBeGreaterThan(0);
    for (const message of refused)
      expect(message).toMatch(
        /^(Applying inline style violates|Loading the stylesheet 'https:\/\/fonts\.googleapis\.com\/)/,
      );
    await page.close();
  });

  it('shows the treasury per chain and a scheduled rebalancing policy on /ui/treasury', async () => {
    const policy = join(stack.dir, 'treasury.yaml');
    writeFileSync(
      policy,
      'name: nightly\nchains:\n  BASE: { min: 5000000, target: 9000000 }\n  ARB: { target: 100 }\n',
    );
    const added = await runCli(
      ['schedule', 'add', 'treasury', '--cron', '0 2 * * *', '--rebalance', policy],
      stack.env,
    );
    expect(added.code, added.stderr).toBe(0);
    const base = await stack.sandbox.admin.balance('BASE', TEST_EVM_ADDRESS);
    const page = await open(desktop, '/ui/treasury');
    const row = page.locator('table[data-table="treasury"] tr[data-chain="BASE"]');
    expect(await row.locator('td[data-label="balance"]').textContent()).toBe(formatUsdc(base));
    expect(await row.locator('td[data-label="owners"]').textContent()).toContain(TEST_EVM_ADDRESS);
    // The chain table flags a chain below a scheduled policy's min too, naming the policy and min.
    expect(await row.locator('td[data-label="state"] [data-flag="below_min"]').count()).toBe(1);
    expect(await row.locator('td[data-label="state"]').textContent()).toMatch(
      /below min\s+nightly: min 5000000\.00/,
    );
    const arbRow = page.locator('table[data-table="treasury"] tr[data-chain="ARB"]');
    expect(await arbRow.locator('td[data-label="state"]').textContent()).toMatch(/spare/);
    const panel = page.locator('[data-policy="nightly"]');
    expect(await panel.locator('tr[data-chain="BASE"] td[data-label="state"]').textContent()).toMatch(
      /below min/,
    );
    expect(await panel.locator('tr[data-chain="ARB"] td[data-label="state"]').textContent()).toMatch(/spare/);
    // The schedule's next firing (02:00 UTC) and its last run (none yet).
    expect(await panel.locator('[data-next-run]').textContent()).toMatch(/^\d{4}-\d\d-\d\d 02:00:00Z$/);
    expect((await panel.locator('[data-last-run]').textContent())?.trim()).toBe('never fired yet');
    expect(await page.locator('header nav a[href="/ui/treasury"]').count()).toBe(1);
    await page.screenshot({ path: join(shots, 'treasury-desktop.png'), fullPage: true });
    await page.close();
  });

  it('says on every page that processing is paused, and shows fees not estimated yet as such, never 0.00', async () => {
    expect((await runCli(['pause'], stack.env)).code).toBe(0);
    try {
      const enqueued = await stack.enqueue(mixedRows(2, 'paused'), ['--batch-id', 'ui-paused-1']);
      expect(enqueued.code, enqueued.stderr).toBe(0);
      for (const path of ['/ui', '/ui/batches/ui-paused-1', '/ui/treasury']) {
        const page = await open(desktop, path);
        const banner = page.locator('[data-paused]');
        expect(await banner.count(), path).toBe(1);
        expect(await banner.textContent(), path).toMatch(
          /Processing is paused since \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ by\s+cli:\S+: nothing is sent until\s+usdc-batch resume/,
        );
        if (path === '/ui/batches/ui-paused-1') {
          // Nothing is estimated while paused: the planned fee says so, each row shows a dash.
          expect((await page.locator('[data-total="fee"]').textContent())?.trim()).toBe('not estimated yet');
          for (const fee of await page.locator('td[data-label="fee"]').allTextContents())
            expect(fee.trim()).toBe('—');
          // …and each queued row says what it waits for.
          for (const waits of await page.locator('td[data-label="error / waiting for"]').allTextContents())
            expect(waits.trim()).toBe('processing is paused (usdc-batch resume)');
          await page.screenshot({ path: join(shots, 'batch-paused-desktop.png'), fullPage: true });
        }
        if (path === '/ui')
          await page.screenshot({ path: join(shots, 'batches-paused-desktop.png'), fullPage: true });
        await page.close();
      }
    } finally {
      expect((await runCli(['resume'], stack.env)).code).toBe(0);
    }
    const page = await open(desktop, '/ui');
    expect(await page.locator('[data-paused]').count()).toBe(0);
    await page.close();
  });

  it('keeps a long batch id on one line in the /ui list (issue 35: it wrapped onto 3–4 lines)', async () => {
    const longId = 'payroll-2026-11-27-north-america-contractors-weekly-run-0001';
    const enqueued = await stack.enqueue(mixedRows(1, 'long'), ['--batch-id', longId]);
    expect(enqueued.code, enqueued.stderr).toBe(0);
    const page = await open(desktop, '/ui');
    const link = page.locator(`tr[data-batch="${longId}"] td[data-label="batch"] a`);
    await expect.poll(() => link.count(), { timeout: 15_000 }).toBe(1);
    expect(await link.textContent()).toBe(longId);
    const box = await link.boundingBox();
    // The link's own line height, read in the page (string code: no DOM types here).
    const lineHeight = Number(
      await page.evaluate(
        `parseFloat(getComputedStyle(document.querySelector('tr[data-batch="${longId}"] td[data-label="batch"] a')).lineHeight)`,
      ),
    );
    expect(box?.height).toBeLessThan(lineHeight * 1.5);
    await page.screenshot({ path: join(shots, 'batches-long-id-desktop.png'), fullPage: true });
    await page.close();
  });
});
