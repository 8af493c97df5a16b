import type { BatchSummary, PausedView } from '../../present/batch-summary.ts';
import { refreshNote, refreshSeconds, rowCount, shortTime, stateBar, statusBadges } from './batch-parts.ts';
import { html, type Html } from './html.ts';
import { pageShell } from './page-shell.ts';

/** `/ui`: recent batches, newest first, each with its progress, totals and status. */
export function batchesPage(
  batches: readonly BatchSummary[],
  limit: number,
  paused: PausedView | null = null,
): Html {
  const body = html`<h1>Batches</h1>
    <p class="muted">
      Up to the ${limit} most recent batches, newest first.${refreshNote(refreshSeconds(batches))}
    </p>
    ${batches.length === 0 ? html`<div class="panel empty">No batches yet.</div>` : batchesTable(batches)}`;
  return pageShell({ title: 'Batches', refreshSeconds: refreshSeconds(batches), paused, body });
}

function batchesTable(batches: readonly BatchSummary[]): Html {
  return html`<div class="scroll">
    <table class="rows" data-table="batches">
      <thead>
        <tr>
          <th>batch</th>
          <th>created</th>
          <th>source</th>
          <th>via</th>
          <th>progress</th>
          <th>transfers</th>
          <th>amount</th>
          <th>paid</th>
          <th>status</th>
        </tr>
      </thead>
      <tbody>
        ${batches.map(batchRow)}
      </tbody>
    </table>
  </div>`;
}

function batchRow(b: BatchSummary): Html {
  const c = b.counts;
  const done = c.submitted + c.failed + c.rejected + c.needs_review + c.cancelled;
  return html`<tr data-batch="${b.batch_id}">
    <td data-label="batch" class="id batch-id">
      <a href="/ui/batches/${encodeURIComponent(b.batch_id)}">${b.batch_id}</a>
    </td>
    <td data-label="created" class="num">${shortTime(b.created_at)}</td>
    <td data-label="source">${b.source}</td>
    <td data-label="via" data-via>${b.via}</td>
    <td data-label="progress">${stateBar(c)}<span class="muted">${done}/${rowCount(c)} final</span></td>
    <td data-label="transfers">${c.submitted} submitted${unpaid(b)}</td>
    <td data-label="amount" class="num">${b.totals.amount}</td>
    <td data-label="paid" class="num">${b.totals.paid.amount}</td>
    <td data-label="status">${statusBadges(b)}</td>
  </tr>`;
}

/** `, 2 failed, 1 needs review`: the final states that are not a payment, where there are any. */
function unpaid(b: BatchSummary): Html | null {
  const parts = (['failed', 'rejected', 'needs_review'] as const)
    .filter((s) => b.counts[s] > 0)
    .map((s) => `${b.counts[s]} ${s.replace('_', ' ')}`);
  // Cancelled rows were not paid either, but by an operator's choice: said, not in red.
  const cancelled = b.counts.cancelled > 0 ? html`, ${b.counts.cancelled} cancelled` : null;
  return parts.length > 0 ? html`, <span class="err">${parts.join(', ')}</span>${cancelled}` : cancelled;
}
