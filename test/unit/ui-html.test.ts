import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { BatchStatus } from '../../src/present/batch-status.ts';
import type { TransferView } from '../../src/present/transfer-view.ts';
import { batchPage } from '../../src/http/ui/batch-page.ts';
import { batchesPage } from '../../src/http/ui/batches-page.ts';
import { escapeHtml, html } from '../../src/http/ui/html.ts';
import { UI_HEADERS } from '../../src/http/ui/page-shell.ts';

const EVIL = `<script>alert("x")</script>&'"><img src=x onerror=alert(1)>`;

function transfer(over: Partial<TransferView> = {}): TransferView {
  return {
    id: 'inv-1',
    line: 2,
    from: 'BASE',
    to: 'ARB',
    amount: '10.00',
    recipient: '0x2F837A1abba5ECe02A82B61C50B1C2385A6DB93c',
    memo: null,
    state: 'submitted',
    intent_id: 'int_1',
    intent_status: 'pending',
    tx_hash: '0xab',
    tx_signature: null,
    owner: null,
    new_recipient: false,
    fee: { total: '0.10', platform: '0.09', gas: '0.01' },
    net_receive: '9.90',
    attempts: 1,
    error: null,
    evidence: [],
    wait_reason: null,
    trace_id: null,
    updated_at: null,
    cctp: null,
    ...over,
  };
}

function doc(over: Partial<BatchStatus> = {}): BatchStatus {
  return {
    batch_id: 'payroll-1',
    created_at: '2025-06-01T12:00:00.000Z',
    source: 'csv',
    via: 'service',
    submitted_by: 'cli:ops',
    complete: false,
    settled: false,
    held: false,
    held_reason: null,
    approval_digest: null,
    approvals: [],
    approvals_required: 1,
    counts: {
      queued: 1,
      in_progress: 0,
      submitted: 1,
      failed: 0,
      rejected: 0,
      needs_review: 0,
      cancelled: 0,
    },
    intents: { complete: 0, failed: 0, untracked: 0, open: 1 },
    totals: {
      amount: '20.00',
      fee: '0.10',
      net_receive: '9.90',
      paid: { amount: '10.00', fee: '0.10', net_receive: '9.90' },
    },
    transfers: [transfer()],
    next_cursor: null,
    paused: null,
    screening: { lists: [], stale: false, onchain: false },
    ...over,
  };
}

const view = { state: undefined, cursor: undefined, limit: 100, defaultLimit: 100 };

describe('batch pages: HTML from outside values', () => {
  it('escapes every interpolated value and keeps markup made by the tag', () => {
    expect(escapeHtml(EVIL)).not.toMatch(/[<>"']/);
    const inner = html`<b>${EVIL}</b>`;
    expect(html`<p>${inner}</p>`.toString()).toBe(`<p><b>${escapeHtml(EVIL)}</b></p>`);
    expect(html`<p>${[EVIL, null, false, undefined, 3]}</p>`.toString()).toBe(`<p>${escapeHtml(EVIL)}3</p>`);
  });

  it('shows the batch’s road on the batch page and in the batches list', () => {
    expect(batchPage(doc({ via: 'cctp-fast' }), view).toString()).toContain(
      'via <span data-via>cctp-fast</span>',
    );
    expect(batchesPage([doc({ via: 'cctp' })], 100).toString()).toContain(
      '<td data-label="via" data-via>cctp</td>',
    );
  });

  it('shows a hostile memo, error message, wait reason and held reason as text', () => {
    const page = batchPage(
      doc({
        held: true,
        held_reason: EVIL,
        transfers: [
          transfer({ memo: EVIL, error: { code: 'refused', message: EVIL } }),
          transfer({ id: 'inv-2', line: 3, state: 'queued', wait_reason: EVIL, intent_id: null }),
        ],
      }),
      view,
    ).toString();
    expect(page).not.toContain('<script>alert');
    expect(page).not.toContain('<img');
    expect(page.split(escapeHtml(EVIL)).length - 1).toBe(4);
  });

  it('shows the lists screened against, stale ones as a warning, and a sanctioned row’s reason, escaped', () => {
    const fresh = { lists: [{ name: EVIL, date: '2026-11-20', addresses: 3 }], stale: false, onchain: true };
    const rejected = transfer({
      state: 'rejected',
      intent_id: null,
      error: {
        code: 'recipient_sanctioned',
        message: 'recipient 0xabc is on the sanctions list l.txt of 2026-11-20',
      },
    });
    const page = batchPage(doc({ screening: fresh, transfers: [rejected] }), view).toString();
    expect(page).toContain('data-screening="fresh"');
    expect(page).not.toContain('<script>alert');
    expect(page).toContain('recipient_sanctioned');
    expect(page).toContain('is on the sanctions list l.txt of 2026-11-20');
    const stale = batchPage(doc({ screening: { ...fresh, stale: true } }), view).toString();
    expect(stale).toContain('data-screening="stale"');
    expect(stale).toContain('nothing is signed until a fresh list is loaded');
    expect(batchPage(doc(), view).toString()).not.toContain('data-screening');
  });

  it('shows a row’s evidence, oldest first and escaped, folded under its error; none for a plain submitted', () => {
    const evidence = [
      '2025-06-01T12:00:01.000Z send 1 failed: ambiguous',
      `2025-06-01T12:00:02.000Z ${EVIL}`,
    ];
    const page = batchPage(
      doc({
        transfers: [
          transfer(),
          transfer({
            id: 'inv-2',
            line: 3,
            state: 'needs_review',
            evidence,
            error: { code: 'outcome_unknown', message: 'm' },
          }),
        ],
      }),
      view,
    ).toString();
    const rows = page.split('<tr data-transfer=');
    expect(rows[1]).not.toContain('data-evidence');
    expect(rows[2]).toMatch(/<details class="evidence" data-evidence>\s*<summary>evidence \(2\)<\/summary>/);
    const items = [...(rows[2] ?? '').matchAll(/<li>([^<]*)<\/li>/g)].map((m) => m[1]);
    expect(items).toEqual([evidence[0], escapeHtml(evidence[1]!)]);
  });

  it('escapes a batch id in links and text on the list page', () => {
    const page = batchesPage([doc({ batch_id: 'a"b<c' })], 100).toString();
    expect(page).toContain('/ui/batches/a%22b%3Cc');
    expect(page).toContain('a&quot;b&lt;c');
  });

  it('admits exactly its own stylesheet by hash, and no script', () => {
    const page = batchesPage([], 100).toString();
    const css = page.slice(page.indexOf('<style>') + '<style>'.length, page.indexOf('</style>'));
    const hash = createHash('sha256').update(css).digest('base64');
    const csp = UI_HEADERS['content-security-policy'] ?? '';
    expect(csp).toContain(`style-src 'sha256-${hash}'`);
    expect(csp).toMatch(/default-src 'none'/);
    expect(csp).not.toMatch(/script-src/);
    expect(page).not.toContain('<script');
  });

  it('reloads itself while the batch is open or settling, and not once it is settled', () => {
    const refresh = (d: BatchStatus) =>
      /http-equiv="refresh" content="(\d+)"/.exec(batchPage(d, view).toString())?.[1];
    expect(refresh(doc())).toBe('5');
    expect(refresh(doc({ complete: true, settled: false }))).toBe('15');
    expect(refresh(doc({ held: true }))).toBe('15');
    expect(refresh(doc({ complete: true, settled: true }))).toBeUndefined();
    expect(refresh(doc({ complete: true, settled: null }))).toBeUndefined();
  });

  it('links the next page with the cursor, keeping the state filter', () => {
    const page = batchPage(doc({ next_cursor: '101' }), {
      ...view,
      state: 'submitted',
      limit: 50,
    }).toString();
    expect(page).toContain('href="/ui/batches/payroll-1?state=submitted&amp;limit=50&amp;cursor=101"');
  });
});
