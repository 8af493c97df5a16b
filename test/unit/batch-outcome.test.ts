import { describe, expect, it } from 'vitest';
import { batchOutcome } from '../../src/domain/batch-outcome.ts';
import type { TransferState } from '../../src/domain/transfer.ts';
import { renderBatches } from '../../src/cli/commands/batches.ts';
import { renderStatus } from '../../src/cli/commands/status.ts';
import { batchPage } from '../../src/http/ui/batch-page.ts';
import { batchesPage } from '../../src/http/ui/batches-page.ts';
import type { BatchStatus } from '../../src/present/batch-status.ts';

const NONE: Record<TransferState, number> = {
  queued: 0,
  in_progress: 0,
  submitted: 0,
  failed: 0,
  rejected: 0,
  needs_review: 0,
  cancelled: 0,
};

function batch(counts: Partial<Record<TransferState, number>>, over: Partial<BatchStatus> = {}): BatchStatus {
  const c = { ...NONE, ...counts };
  return {
    batch_id: 'b-1',
    created_at: '2025-06-01T12:00:00.000Z',
    source: 'csv',
    via: 'service',
    submitted_by: 'cli:ops',
    complete: c.queued + c.in_progress === 0,
    settled: c.queued + c.in_progress === 0,
    held: false,
    held_reason: null,
    approval_digest: null,
    approvals: [],
    approvals_required: 1,
    counts: c,
    intents: { complete: c.submitted, failed: 0, untracked: 0, open: 0 },
    totals: {
      amount: '10.00',
      fee: '0.00',
      net_receive: '10.00',
      paid: { amount: '0.00', fee: '0.00', net_receive: '0.00' },
    },
    transfers: [],
    next_cursor: null,
    paused: null,
    screening: { lists: [], stale: false, onchain: false },
    ...over,
  };
}

const view = { state: undefined, cursor: undefined, limit: 100, defaultLimit: 100 };

/** The outcome badge of a page: its tone and text. */
function outcomeBadge(page: string): { tone: string; text: string } | undefined {
  const m = /class="badge outcome ([a-z_]+)"[^>]*>([^<]*)</.exec(page);
  return m ? { tone: m[1]!, text: m[2]!.trim() } : undefined;
}

describe('a batch outcome: what people read first', () => {
  it('names what went wrong, in the tone of its worst part', () => {
    expect(batchOutcome(batch({ failed: 1 }))).toEqual({ text: '1 failed', tone: 'failed' });
    expect(batchOutcome(batch({ rejected: 1 }))).toEqual({ text: '1 rejected', tone: 'rejected' });
    expect(batchOutcome(batch({ needs_review: 2, submitted: 3 }))).toEqual({
      text: '2 need review',
      tone: 'needs_review',
    });
    expect(batchOutcome(batch({ submitted: 4, failed: 1, rejected: 2, needs_review: 1 }))).toEqual({
      text: '1 needs review, 1 failed, 2 rejected',
      tone: 'needs_review',
    });
    expect(batchOutcome(batch({ submitted: 2, rejected: 1, failed: 1 })).tone).toBe('failed');
  });

  it('says all paid only when every transfer was submitted, and what is paid so far while it runs', () => {
    expect(batchOutcome(batch({ submitted: 3 }))).toEqual({ text: 'all paid', tone: 'paid' });
    expect(batchOutcome(batch({ submitted: 1, queued: 2 }))).toEqual({
      text: '1 of 3 paid so far',
      tone: 'in_progress',
    });
    expect(batchOutcome(batch({ failed: 1, queued: 2 }))).toEqual({
      text: '1 failed so far',
      tone: 'failed',
    });
    expect(batchOutcome(batch({}))).toEqual({ text: 'no transfers', tone: 'empty' });
  });

  it('says cancelled rows, never as a failure: they take no part in the tone', () => {
    expect(batchOutcome(batch({ cancelled: 2 }))).toEqual({ text: 'all cancelled', tone: 'cancelled' });
    expect(batchOutcome(batch({ submitted: 3, cancelled: 2 }))).toEqual({
      text: '3 paid, 2 cancelled',
      tone: 'cancelled',
    });
    expect(batchOutcome(batch({ submitted: 1, queued: 2, cancelled: 1 }))).toEqual({
      text: '1 of 3 paid so far, 1 cancelled',
      tone: 'in_progress',
    });
    expect(batchOutcome(batch({ failed: 1, cancelled: 1 }))).toEqual({
      text: '1 failed, 1 cancelled',
      tone: 'failed',
    });
  });

  it('counts an intent that failed after submission against the batch', () => {
    const b = batch({ submitted: 2 }, { intents: { complete: 1, failed: 1, untracked: 0, open: 0 } });
    expect(batchOutcome(b)).toEqual({ text: '1 intent failed after submission', tone: 'failed' });
  });
});

describe('a batch outcome on the pages and in the CLI', () => {
  it('shows a complete, settled batch whose only row failed as failed, nothing in green', () => {
    const only = batch({ failed: 1 });
    for (const page of [batchPage(only, view).toString(), batchesPage([only], 100).toString()]) {
      expect(outcomeBadge(page)).toEqual({ tone: 'failed', text: '1 failed' });
      // complete and intents settled are said, but not as good news.
      expect(page).toMatch(/<span class="badge" data-flag="complete"[^>]*>complete</);
      expect(page).toMatch(/<span class="badge" data-flag="settled"[^>]*>\s*intents settled\s*</);
      expect(page).not.toMatch(/class="badge (done|outcome paid)/);
    }
  });

  it('colours a needs_review or rejected row and a paid batch by their outcome', () => {
    expect(outcomeBadge(batchPage(batch({ needs_review: 1 }), view).toString())).toEqual({
      tone: 'needs_review',
      text: '1 needs review',
    });
    expect(outcomeBadge(batchesPage([batch({ rejected: 1 })], 100).toString())).toEqual({
      tone: 'rejected',
      text: '1 rejected',
    });
    expect(outcomeBadge(batchPage(batch({ submitted: 2 }), view).toString())).toEqual({
      tone: 'paid',
      text: 'all paid',
    });
  });

  it('shows a cancelled row as cancelled, in no failure colour, on both pages and in the CLI', () => {
    const doc = batch(
      { submitted: 1, cancelled: 1 },
      {
        transfers: [
          {
            id: 'c-1',
            line: 2,
            from: 'BASE',
            to: 'ARB',
            amount: '900.00',
            recipient: '0x1111111111111111111111111111111111111111',
            memo: null,
            state: 'cancelled',
            intent_id: null,
            intent_status: null,
            tx_hash: null,
            tx_signature: null,
            owner: null,
            new_recipient: false,
            fee: null,
            net_receive: null,
            attempts: 0,
            error: { code: 'cancelled', message: 'cancelled by cli:ops' },
            evidence: [],
            wait_reason: null,
            trace_id: null,
            cctp: null,
            updated_at: null,
          },
        ],
      },
    );
    const page = batchPage(doc, view).toString();
    expect(outcomeBadge(page)).toEqual({ tone: 'cancelled', text: '1 paid, 1 cancelled' });
    expect(page).toMatch(/<span class="dot cancelled"><\/span>cancelled/);
    expect(page).not.toMatch(/class="err"/);
    expect(page).toMatch(/data-count="cancelled">1</);
    const list = batchesPage([doc], 100).toString();
    expect(outcomeBadge(list)).toEqual({ tone: 'cancelled', text: '1 paid, 1 cancelled' });
    expect(list).toContain('2/2 final');
    expect(list).not.toMatch(/class="err"/);
    expect(renderStatus(doc)).toMatch(/needs_review 0 {2}cancelled 1/);
    expect(renderBatches([doc]).split('\n')[0]).toMatch(/\sreview\s+cancelled\s+amount/);
  });

  it('prints the outcome in status and batches text', () => {
    const text = renderStatus(batch({ needs_review: 2 }));
    expect(text.split('\n')[1]).toBe('outcome: 2 need review');
    expect(text).toContain('complete: yes  intents settled: yes');
    const list = renderBatches([batch({ failed: 1 }, { batch_id: 'b-failed' }), batch({ submitted: 2 })]);
    const [head, failedRow, paidRow] = list.split('\n');
    expect(head).toMatch(/^batch\s+created\s+source\s+via\s+outcome\s+complete\s+intents_settled/);
    expect(failedRow).toMatch(/^b-failed\s+\S+\s+csv\s+service\s+1 failed\s+yes\s+yes/);
    expect(paidRow).toMatch(/\scsv\s+service\s+all paid\s+yes/);
    // The road is shown where the batch is: the status's first line, the batches table.
    expect(renderStatus(batch({ submitted: 1 }, { via: 'cctp-fast' })).split('\n')[0]).toContain(
      '(csv, via cctp-fast, created',
    );
    expect(renderBatches([batch({ submitted: 1 }, { via: 'cctp' })])).toMatch(/\scsv\s+cctp\s+all paid/);
  });

  it('says in status text what the workers screen with, and when screening is stale', () => {
    expect(renderStatus(batch({ submitted: 1 }))).toContain(
      '\nscreening: no sanctions list; on-chain checks off\n',
    );
    const screening = {
      lists: [
        { name: 'sdn_advanced.xml', date: '2026-11-20', addresses: 1204 },
        { name: 'plain.txt', date: '2026-11-27', addresses: 3 },
      ],
      stale: true,
      onchain: true,
    };
    expect(renderStatus(batch({ queued: 2 }, { screening }))).toContain(
      '\nscreening: sdn_advanced.xml of 2026-11-20 (1,204 addresses), plain.txt of 2026-11-27 (3 addresses) ' +
        'STALE: nothing is signed until a fresh list is loaded; on-chain checks on\n',
    );
  });
});
