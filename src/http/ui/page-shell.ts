import { createHash } from 'node:crypto';
import type { PausedView } from '../../present/batch-summary.ts';
import { constantMarkup, html, type Html, type HtmlValue } from './html.ts';

/*
 * The frame every batch page shares: the document head (viewport for phones, a self-refresh while
 * something is still moving), one stylesheet inline, and the response headers that lock the page
 * down. The pages run no script at all: the Content-Security-Policy allows none, loads nothing from
 * anywhere, and admits this stylesheet only by its hash.
 */

const UI_CSS = `
:root { color-scheme: light; --fg: #1d2330; --muted: #5b6475; --line: #dde1e8; --bg: #f6f7f9;
  --queued: #9aa3b2; --in_progress: #3b82f6; --submitted: #16a34a; --failed: #dc2626;
  --rejected: #ea580c; --needs_review: #a855f7; --cancelled: #475569; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: var(--fg); background: var(--bg); }
header.top { display: flex; gap: 1rem; align-items: baseline; flex-wrap: wrap;
  padding: .6rem 1rem; background: #1d2330; color: #fff; }
header.top a { color: #fff; text-decoration: none; font-weight: 600; }
header.top nav a { font-weight: 400; opacity: .85; margin-right: .8rem; }
main { padding: 1rem; max-width: 1400px; margin: 0 auto; }
h1 { font-size: 1.25rem; margin: 0 0 .5rem; overflow-wrap: anywhere; }
h2 { font-size: 1rem; margin: 1.2rem 0 .5rem; }
a { color: #1f5fbf; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .92em; }
.muted { color: var(--muted); }
.badges { display: flex; gap: .4rem; flex-wrap: wrap; margin: .3rem 0 .6rem; }
.badge { display: inline-block; padding: .05rem .5rem; border-radius: 999px; font-size: .8rem;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  border: 1px solid var(--line); background: #fff; white-space: nowrap; }
.badge.held { background: #fff4d6; border-color: #e8c45c; }
.badge.open { background: #e8f0fe; border-color: #9dbcf5; }
.badge.warn { background: #fde8e8; border-color: #f0a3a3; }
.badge.new { background: #fff4d6; border-color: #e8c45c; }
.badge.outcome { font-weight: 600; }
.badge.outcome.needs_review { background: #f3e8ff; border-color: var(--needs_review); color: #6b21a8; }
.badge.outcome.failed { background: #fde8e8; border-color: var(--failed); color: #9b1c1c; }
.badge.outcome.rejected { background: #ffedd5; border-color: var(--rejected); color: #9a3412; }
.badge.outcome.in_progress { background: #e8f0fe; border-color: var(--in_progress); color: #1e40af; }
.badge.outcome.paid { background: #e3f6e8; border-color: var(--submitted); color: #14532d; }
.badge.outcome.cancelled { background: #f1f5f9; border-color: var(--cancelled); color: #334155; }
.panel { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: .8rem 1rem; margin-bottom: 1rem; }
.paused-banner { background: #fde8e8; border: 1px solid #f0a3a3; border-radius: 6px; padding: .5rem .8rem;
  margin: 0 0 .8rem; font-weight: 600; color: #7f1d1d; }
.held-reason { background: #fff8e6; border: 1px solid #e8c45c; border-radius: 6px; padding: .5rem .8rem;
  margin: .5rem 0; overflow-wrap: anywhere; }
svg.bar { display: block; width: 100%; height: 12px; border-radius: 3px; background: #eef0f4; }
svg.bar rect.queued { fill: var(--queued); } svg.bar rect.in_progress { fill: var(--in_progress); }
svg.bar rect.submitted { fill: var(--submitted); } svg.bar rect.failed { fill: var(--failed); }
svg.bar rect.rejected { fill: var(--rejected); } svg.bar rect.needs_review { fill: var(--needs_review); }
svg.bar rect.cancelled { fill: var(--cancelled); }
.dot { display: inline-block; width: .65rem; height: .65rem; border-radius: 2px; margin-right: .25rem;
  vertical-align: baseline; }
.dot.queued { background: var(--queued); } .dot.in_progress { background: var(--in_progress); }
.dot.submitted { background: var(--submitted); } .dot.failed { background: var(--failed); }
.dot.rejected { background: var(--rejected); } .dot.needs_review { background: var(--needs_review); }
.dot.cancelled { background: var(--cancelled); }
dl.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(10rem, 1fr)); gap: .3rem 1rem; margin: .6rem 0 0; }
dl.figures div { min-width: 0; }
dl.figures div.wide { grid-column: span 2; }
dl.figures dt { color: var(--muted); font-size: .8rem; }
dl.figures dd { margin: 0; font-variant-numeric: tabular-nums; overflow-wrap: anywhere; }
ul.states { list-style: none; padding: 0; margin: .6rem 0 0; display: flex; flex-wrap: wrap; gap: .35rem; }
ul.states a, ul.states span { display: inline-block; padding: .15rem .55rem; border: 1px solid var(--line);
  border-radius: 4px; background: #fff; text-decoration: none; color: var(--fg); white-space: nowrap; }
ul.states .current { border-color: #1d2330; background: #1d2330; color: #fff; }
ul.states .current .dot { outline: 1px solid #fff; }
table.rows { width: 100%; border-collapse: collapse; background: #fff; border: 1px solid var(--line); }
table.rows th, table.rows td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line);
  vertical-align: top; }
table.rows th { background: #eef0f4; font-weight: 600; font-size: .8rem; white-space: nowrap; }
table.rows td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.rows td.wrap { overflow-wrap: anywhere; min-width: 11rem; max-width: 24rem; }
.scroll { overflow-x: auto; }
table.rows td.id { overflow-wrap: anywhere; min-width: 7rem; max-width: 14rem; }
table.rows td.batch-id { white-space: nowrap; max-width: none; overflow-wrap: normal; }
table.rows td.batch-id a { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .88em; }
.memo { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; overflow-wrap: anywhere; }
.clip { display: block; max-width: 8.5rem; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.state { white-space: nowrap; }
.err { color: #9b1c1c; }
details.evidence { margin-top: .3rem; font-size: .85em; }
details.evidence summary { cursor: pointer; color: var(--muted); }
details.evidence ol { margin: .2rem 0 0; padding-left: 1.2rem; overflow-wrap: anywhere; }
.pager { display: flex; gap: 1rem; align-items: center; flex-wrap: wrap; margin: .8rem 0; }
.links { display: flex; gap: 1rem; flex-wrap: wrap; margin: .5rem 0; }
.empty { padding: 1rem; text-align: center; color: var(--muted); }
@media (max-width: 760px) {
  main { padding: .6rem; }
  .scroll { overflow-x: visible; }
  table.rows, table.rows tbody, table.rows tr, table.rows td { display: block; width: 100%; max-width: none; }
  table.rows thead { display: none; }
  table.rows tr { border-bottom: 2px solid var(--line); padding: .3rem 0; }
  table.rows td { border: 0; padding: .1rem .5rem .1rem 7.5rem; position: relative; text-align: left;
    min-height: 1.4rem; }
  table.rows td.num { text-align: left; white-space: normal; }
  table.rows td::before { content: attr(data-label); position: absolute; left: .5rem; width: 6.5rem;
    color: var(--muted); font-size: .8rem; line-height: 1.8; }
  .clip { max-width: none; white-space: normal; overflow-wrap: anywhere; }
  table.rows td.batch-id { white-space: normal; overflow-wrap: anywhere; }
}
`;

/** The stylesheet's CSP source: the page may apply this exact stylesheet and no other. */
const STYLE_SOURCE = `'sha256-${createHash('sha256').update(UI_CSS).digest('base64')}'`;

/**
 * Headers of every batch page: no script, no outside loads, no framing, no caching of payout
 * data, no referrer leaving with a batch id in it.
 */
export const UI_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': `default-src 'none'; style-src ${STYLE_SOURCE}; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

export type PageFrame = {
  readonly title: string;
  /** Reload the page after this many seconds (while a batch is still moving); none when absent. */
  readonly refreshSeconds?: number | undefined;
  /** Processing is paused (docs/operating.md, `pause`): every page says so, since when and by whom, on top. */
  readonly paused?: PausedView | null | undefined;
  readonly body: HtmlValue;
};

/** `2025-06-01 12:34:56Z`. */
function shownTime(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}Z`;
}

function pausedBanner(p: PausedView): Html {
  return html`<div class="paused-banner" role="status" data-paused>
    Processing is paused since <span data-paused-since="${p.since}">${shownTime(p.since)}</span> by
    <span class="mono" data-paused-by>${p.by ?? 'someone (not recorded)'}</span>: nothing is sent until
    <code>usdc-batch resume</code>.
  </div>`;
}

/** A whole HTML document around `body`. */
export function pageShell(frame: PageFrame): Html {
  const refresh =
    frame.refreshSeconds !== undefined
      ? html`<meta http-equiv="refresh" content="${frame.refreshSeconds}" />`
      : null;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <!-- No icon: without this line a browser asks for /favicon.ico on every page load, without
             the page's credentials, and each 401 counts as a failed authentication. -->
        <link rel="icon" href="data:," />
        ${refresh}
        <title>${frame.title} · usdc-batch</title>
        ${styleElement()}
      </head>
      <body>
        <header class="top">
          <a href="/ui">usdc-batch</a>
          <nav>
            <a href="/ui">batches</a><a href="/ui/treasury">treasury</a><a href="/dashboard">queues</a>
          </nav>
        </header>
        <main>${frame.paused ? pausedBanner(frame.paused) : null}${frame.body}</main>
      </body>
    </html> `;
}

/**
 * The `<style>` element: made whole from this module's constant, so that no formatter or template
 * can add a byte inside it (the CSP admits its exact text by hash), and never escaped.
 */
function styleElement(): Html {
  return constantMarkup(`<style>${UI_CSS}</style>`);
}
