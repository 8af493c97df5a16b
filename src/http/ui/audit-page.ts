import { formatAuditDetail, type AuditEntry } from '../../store/audit.ts';
import type { PausedView } from '../../present/batch-summary.ts';
import { shortTime } from './batch-parts.ts';
import { html, type Html } from './html.ts';
import { pageShell } from './page-shell.ts';

/** `/ui/batches/:id/audit`: the operator actions on one batch, newest first. */
export function auditPage(
  batchId: string,
  entries: readonly AuditEntry[],
  paused: PausedView | null = null,
): Html {
  const base = `/ui/batches/${encodeURIComponent(batchId)}`;
  const body = html`<h1>Audit of batch <a class="mono" href="${base}">${batchId}</a></h1>
    <p class="muted">Operator actions on this batch, newest first: who, when, what.</p>
    ${entries.length === 0 ? html`<div class="panel empty">No actions recorded for this batch.</div>` : auditTable(entries)}`;
  return pageShell({ title: `Audit of ${batchId}`, paused, body });
}

function auditTable(entries: readonly AuditEntry[]): Html {
  return html`<div class="scroll">
    <table class="rows" data-table="audit">
      <thead>
        <tr>
          <th>when</th>
          <th>who</th>
          <th>action</th>
          <th>detail</th>
        </tr>
      </thead>
      <tbody>
        ${entries.map(
          (e) =>
            html`<tr data-action="${e.action}">
              <td data-label="when" class="num">${shortTime(e.at)}</td>
              <td data-label="who" class="mono">${e.who}</td>
              <td data-label="action">${e.action}</td>
              <td data-label="detail" class="wrap">${formatAuditDetail(e.detail)}</td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}
