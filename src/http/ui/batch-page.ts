import { counted } from '../../domain/plural.ts';
import { TRANSFER_STATES, type TransferState } from '../../domain/transfer.ts';
import type { BatchStatus } from '../../present/batch-status.ts';
import type { TransferView } from '../../present/transfer-view.ts';
import {
  figures,
  refreshNote,
  refreshSeconds,
  rowCount,
  shortTime,
  stateBar,
  stateCount,
  statusBadges,
} from './batch-parts.ts';
import { html, pathWithQuery, type Html } from './html.ts';
import { pageShell } from './page-shell.ts';

/** What the batch page was asked for: one state or all, and which page of rows. */
export type BatchPageView = {
  readonly state: TransferState | undefined;
  readonly cursor: string | undefined;
  readonly limit: number;
  /** The default page size: left out of links that keep it. */
  readonly defaultLimit: number;
};

/**
 * `/ui/batches/:id`: the batch (badges, progress, totals) and one page of its rows, filtered by
 * state, with links to the export and the batch's audit entries.
 */
export function batchPage(doc: BatchStatus, view: BatchPageView): Html {
  const base = `/ui/batches/${encodeURIComponent(doc.batch_id)}`;
  const refresh = refreshSeconds([doc]);
  const body = html`<h1>Batch <span class="mono" data-batch-id>${doc.batch_id}</span></h1>
    ${statusBadges(doc)}
    <p class="muted">
      ${doc.source}, created
      ${shortTime(doc.created_at)}${doc.submitted_by ? html` by <span data-submitted-by>${doc.submitted_by}</span>` : null},
      ${counted(rowCount(doc.counts), 'transfer')}.${refreshNote(refresh)}
    </p>
    ${doc.held ? html`<div class="held-reason" data-held-reason><b>Held for approval:</b> ${doc.held_reason ?? ''}</div>` : null}
    ${screeningLine(doc)} ${approvalsPanel(doc)}
    <section class="panel">${stateBar(doc.counts)} ${stateFilter(doc, view, base)} ${figures(doc)}</section>
    <div class="links">
      <a href="${base}/export.csv" data-link="export">export (CSV)</a>
      <a href="${base}/audit" data-link="audit">audit entries</a>
    </div>
    <h2>${view.state ? html`Transfers ${view.state.replace('_', ' ')}` : 'Transfers'}</h2>
    ${doc.transfers.length === 0 ? noRows(view) : transfersTable(doc.transfers, doc.paused !== null)}
    ${pager(doc, view, base)}`;
  return pageShell({ title: `Batch ${doc.batch_id}`, refreshSeconds: refresh, paused: doc.paused, body });
}

/**
 * The sanctions lists the workers screen with (docs/screening.md): stale ones say that nothing is
 * signed; a rejected row's own reason (`recipient_sanctioned`, the list) is in its row.
 */
function screeningLine(doc: BatchStatus): Html | null {
  const s = doc.screening;
  if (s.lists.length === 0) return null;
  const lists = s.lists.map((l) => `${l.name} of ${l.date}`).join(', ');
  return s.stale
    ? html`<div class="held-reason" data-screening="stale">
        <b>Screening is stale:</b> ${lists} — nothing is signed until a fresh list is loaded.
      </div>`
    : html`<p class="muted" data-screening="fresh">Screened against ${lists}.</p>`;
}

/**
 * Four eyes (docs/access.md "Four eyes"): while held, the digest an approval names and the approvals so far
 * — those of an earlier digest marked void; once released, who approved it.
 */
function approvalsPanel(doc: BatchStatus): Html | null {
  if (!doc.held && doc.approvals.length === 0) return null;
  const valid = doc.approvals.filter((a) => a.digest === doc.approval_digest && a.name !== doc.submitted_by);
  const items = doc.approvals.map(
    (a) =>
      html`<li data-approval="${a.name}">
        <span class="mono">${a.name}</span>, ${shortTime(a.at)}
        ${doc.held && a.digest !== doc.approval_digest ? html`<span class="muted" data-void>— given for an earlier digest (${a.digest.slice(0, 12)}…): does not count</span>` : null}
      </li>`,
  );
  if (!doc.held) {
    return html`<div class="panel" data-approvals>
      <b>Approved by</b>
      <ul>
        ${items}
      </ul>
    </div>`;
  }
  return html`<div class="panel" data-approvals>
    <div>
      <b>approval_digest</b>
      <code class="clip" title="${doc.approval_digest ?? ''}" data-approval-digest
        >${doc.approval_digest ?? '–'}</code
      >
    </div>
    <div>
      approvals: <b data-approval-count>${valid.length}</b> of
      <b data-approvals-required>${doc.approvals_required}</b> needed, from distinct approvers, never the
      submitter${doc.submitted_by ? html` (${doc.submitted_by})` : null}; an approval names this digest:
      <code>usdc-batch approve ${doc.batch_id}</code> shows the rows and asks.
    </div>
    ${
      items.length > 0
        ? html`<ul>
            ${items}
          </ul>`
        : null
    }
  </div>`;
}

/** All / each state with its count, as links; the current one marked. */
function stateFilter(doc: BatchStatus, view: BatchPageView, base: string): Html {
  const link = (state: TransferState | undefined, label: Html) => {
    const href = pathWithQuery(base, { state, limit: limitParam(view) });
    const current = view.state === state;
    return current
      ? html`<li>
          <span class="current" aria-current="page" data-state="${state ?? 'all'}">${label}</span>
        </li>`
      : html`<li><a href="${href}" data-state="${state ?? 'all'}">${label}</a></li>`;
  };
  return html`<ul class="states" data-filter>
    ${link(undefined, html`all <b data-count="all">${rowCount(doc.counts)}</b>`)}
    ${TRANSFER_STATES.map((s) => link(s, stateCount(s, doc.counts[s])))}
  </ul>`;
}

function noRows(view: BatchPageView): Html {
  const which = `${view.state ? ` ${view.state}` : ''}${view.cursor ? ' after this line' : ''}`;
  return html`<div class="panel empty">No transfers${which}.</div>`;
}

function limitParam(view: BatchPageView): string | undefined {
  return view.limit === view.defaultLimit ? undefined : String(view.limit);
}

function transfersTable(transfers: readonly TransferView[], paused: boolean): Html {
  return html`<div class="scroll">
    <table class="rows" data-table="transfers">
      <thead>
        <tr>
          <th>line</th>
          <th>id</th>
          <th>state</th>
          <th>amount</th>
          <th>route</th>
          <th>recipient</th>
          <th>intent</th>
          <th>tx</th>
          <th>fee</th>
          <th>error / waiting for</th>
          <th>trace</th>
        </tr>
      </thead>
      <tbody>
        ${transfers.map((t) => transferRow(t, paused))}
      </tbody>
    </table>
  </div>`;
}

function transferRow(t: TransferView, paused: boolean): Html {
  const tx = t.tx_hash ?? t.tx_signature;
  const newBadge = t.new_recipient
    ? html`<span class="badge new" title="not in the address book when the batch was enqueued"
        >new recipient</span
      >`
    : null;
  return html`<tr data-transfer="${t.id}">
    <td data-label="line" class="num">${t.line}</td>
    <td data-label="id" class="id mono">
      ${t.id}${t.memo ? html`<div class="muted memo" data-memo>${t.memo}</div>` : null}
    </td>
    <td data-label="state" class="state"><span class="dot ${t.state}"></span>${t.state}</td>
    <td data-label="amount" class="num">${t.amount}</td>
    <td data-label="route">${t.from}→${t.to}</td>
    <td data-label="recipient" class="mono">${clipped(t.recipient)}${newBadge}</td>
    <td data-label="intent" class="mono">
      ${
        t.intent_id
          ? html`<span class="clip" title="${t.intent_id}" data-intent-id>${t.intent_id}</span>
              <div class="muted" data-intent-status>${t.intent_status ?? ''}</div>`
          : '–'
      }
    </td>
    <td data-label="tx" class="mono">${tx ? clipped(tx) : '–'}</td>
    <td data-label="fee" class="num">
      ${t.fee ? t.fee.total : html`<span class="muted" title="not estimated yet">—</span>`}
    </td>
    <td data-label="error / waiting for" class="wrap">${problemText(t, paused)}</td>
    <td data-label="trace" class="mono">
      ${
        t.trace_id
          ? html`<span class="clip" title="its trace: look it up by this id in the trace store" data-trace-id
              >${t.trace_id}</span
            >`
          : html`<span class="muted" title="tracing was off while it ran">–</span>`
      }
    </td>
  </tr>`;
}

/**
 * A long value (an address, a hash) on one line, cut with an ellipsis on wide screens: the whole
 * value stays in the page (selecting and copying it copies all of it) and in its tooltip.
 */
function clipped(value: string): Html {
  return html`<span class="clip" title="${value}">${value}</span>`;
}

function problemText(t: TransferView, paused: boolean): Html {
  const waitsFor =
    t.wait_reason ?? (paused && t.state === 'queued' ? 'processing is paused (usdc-batch resume)' : '');
  // A cancelled row says who cancelled it, never in a failure's red.
  const said = t.error
    ? t.state === 'cancelled'
      ? html`<span class="muted"><code>${t.error.code}</code> ${t.error.message}</span>`
      : html`<span class="err"><code>${t.error.code}</code> ${t.error.message}</span>`
    : html`${waitsFor}`;
  return html`${said}${evidenceList(t.evidence)}`;
}

/**
 * What the worker saw that decided the transfer's fate, oldest first, folded (a `details`
 * element opens without a script): what an operator reads before `resolve`.
 */
function evidenceList(evidence: readonly string[]): Html | null {
  if (evidence.length === 0) return null;
  return html`<details class="evidence" data-evidence>
    <summary>evidence (${evidence.length})</summary>
    <ol>
      ${evidence.map((line) => html`<li>${line}</li>`)}
    </ol>
  </details>`;
}

/** Which lines this page shows, and links to the next page and back to the first. */
function pager(doc: BatchStatus, view: BatchPageView, base: string): Html {
  const first = doc.transfers[0];
  const last = doc.transfers[doc.transfers.length - 1];
  const shown = first && last ? html`lines ${first.line}–${last.line}` : null;
  const keep = { state: view.state, limit: limitParam(view) };
  const next = doc.next_cursor
    ? html`<a href="${pathWithQuery(base, { ...keep, cursor: doc.next_cursor })}" data-link="next"
        >next ${view.limit} →</a
      >`
    : null;
  const back = view.cursor
    ? html`<a href="${pathWithQuery(base, keep)}" data-link="first">← first page</a>`
    : null;
  if (!shown && !next && !back) return html``;
  return html`<nav class="pager">${back}<span class="muted">${shown}</span>${next}</nav>`;
}
