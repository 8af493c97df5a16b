import { TRANSFER_STATES, type TransferState } from '../../domain/transfer.ts';
import { batchOutcome } from '../../domain/batch-outcome.ts';
import type { BatchSummary } from '../../present/batch-summary.ts';
import { html, type Html } from './html.ts';

/* Pieces both batch pages show: the progress bar, the status badges, the figures. */

/** `2025-06-01 12:34:56Z` from an ISO time; a dash when absent. */
export function shortTime(iso: string | null): string {
  return iso ? `${iso.slice(0, 10)} ${iso.slice(11, 19)}Z` : '–';
}

/** Transfers of the batch, whatever their state. */
export function rowCount(counts: Record<TransferState, number>): number {
  return TRANSFER_STATES.reduce((n, s) => n + counts[s], 0);
}

/**
 * The counts by state as one stacked bar (SVG, so no inline style is needed under the page's
 * CSP), with a text equivalent for screen readers.
 */
export function stateBar(counts: Record<TransferState, number>): Html {
  const total = rowCount(counts);
  let x = 0;
  const rects = TRANSFER_STATES.filter((s) => counts[s] > 0).map((s) => {
    const width = total > 0 ? (counts[s] / total) * 1000 : 0;
    const rect = html`<rect class="${s}" x="${x.toFixed(2)}" y="0" width="${width.toFixed(2)}" height="10"
      ><title>${s} ${counts[s]}</title></rect
    >`;
    x += width;
    return rect;
  });
  const label = TRANSFER_STATES.map((s) => `${s} ${counts[s]}`).join(', ');
  return html`<svg
    class="bar"
    viewBox="0 0 1000 10"
    preserveAspectRatio="none"
    role="img"
    aria-label="${label}"
  >
    ${rects}
  </svg>`;
}

/** A colour key and count for one state, e.g. `■ submitted 8`. */
export function stateCount(state: TransferState, n: number): Html {
  return html`<span class="dot ${state}"></span>${state.replace('_', ' ')} <b data-count="${state}">${n}</b>`;
}

/**
 * The outcome (`all paid`, `1 failed, 2 need review`) in the colour of its worst part, then held /
 * complete or in progress / intents settled, as badges. Only the outcome is coloured as good or
 * bad: `complete` says every transfer is final and `intents settled` that the submitted intents
 * are, neither that the batch went well.
 */
export function statusBadges(b: BatchSummary): Html {
  const outcome = batchOutcome(b);
  const held = b.held ? html`<span class="badge held" data-flag="held">held for approval</span>` : null;
  const complete = b.complete
    ? html`<span class="badge" data-flag="complete" title="every transfer is final">complete</span>`
    : html`<span class="badge open" data-flag="complete">in progress</span>`;
  return html`<span class="badges"
    ><span class="badge outcome ${outcome.tone}" data-flag="outcome" data-tone="${outcome.tone}"
      >${outcome.text}</span
    >${held}${complete}${settledBadge(b)}</span
  >`;
}

function settledBadge(b: BatchSummary): Html {
  if (b.settled === null) {
    return html`<span
      class="badge warn"
      data-flag="settled"
      title="the service has no status route for some intents"
      >intents: settlement unknown</span
    >`;
  }
  if (b.settled) {
    return html`<span class="badge" data-flag="settled" title="every submitted intent has a final status"
      >intents settled</span
    >`;
  }
  return b.complete
    ? html`<span class="badge open" data-flag="settled">intents settling</span>`
    : html`<span class="badge" data-flag="settled">intents not settled</span>`;
}

/** Planned and paid totals and where the intents are. */
export function figures(b: BatchSummary): Html {
  const t = b.totals;
  const i = b.intents;
  const failedIntents =
    i.failed > 0 ? html`<span class="err">${i.failed} failed</span>` : html`${i.failed} failed`;
  return html`<dl class="figures">
    <div>
      <dt>planned amount</dt>
      <dd data-total="amount">${t.amount} USDC</dd>
    </div>
    <div>
      <dt>planned fee / net</dt>
      <dd data-total="fee">
        ${
          t.fee === null || t.net_receive === null
            ? html`<span class="muted" title="each transfer is estimated before it is sent"
                >not estimated yet</span
              >`
            : `${t.fee} / ${t.net_receive}`
        }
      </dd>
    </div>
    <div>
      <dt>paid amount</dt>
      <dd data-total="paid">${t.paid.amount} USDC</dd>
    </div>
    <div>
      <dt>paid fee / net</dt>
      <dd>${t.paid.fee} / ${t.paid.net_receive}</dd>
    </div>
    <div>
      <dt>intents</dt>
      <dd>
        ${i.complete} complete, ${failedIntents}, ${i.open} not
        final${i.untracked > 0 ? `, ${i.untracked} untracked` : ''}
      </dd>
    </div>
  </dl>`;
}

/**
 * Seconds until a page showing these batches reloads itself: soon while one is moving, slower
 * while one waits for an approval or only for its intents to settle; never once all are complete
 * and settled (or cannot settle), when nothing changes unless someone acts.
 */
export function refreshSeconds(batches: readonly BatchSummary[]): number | undefined {
  if (batches.some((b) => !b.complete && !b.held)) return 5;
  if (batches.some((b) => !b.complete || b.settled === false)) return 15;
  return undefined;
}

/** ` This page reloads itself every 5 s.`, or nothing. */
export function refreshNote(seconds: number | undefined): Html | null {
  return seconds === undefined ? null : html` This page reloads itself every ${seconds} s.`;
}
