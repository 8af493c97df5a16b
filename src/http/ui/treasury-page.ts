import type { PausedView } from '../../present/batch-summary.ts';
import type { TreasuryView } from '../../treasury/treasury-view.ts';
import { html, type Html } from './html.ts';
import { pageShell } from './page-shell.ts';

const STATE_BADGE = { below_min: 'warn', ok: 'done', spare: 'open' } as const;

/** `/ui/treasury`: the treasury's USDC per chain (and per owner), and each scheduled rebalancing policy. */
export function treasuryPage(view: TreasuryView, paused: PausedView | null = null): Html {
  const body = html`<h1>Treasury</h1>
    <p class="muted">
      The treasury's USDC per chain, read now. Position = balance − outgoing (transfers from the chain not yet
      shown by it) + incoming (moves to the treasury not yet final).
    </p>
    ${
      view.chains.length === 0
        ? html`<div class="panel empty">
            No treasury key is configured here (EVM_PRIVATE_KEY, SOLANA_KEYPAIR_FILE).
          </div>`
        : chainsTable(view)
    }
    <h2>Scheduled rebalancing policies</h2>
    ${
      view.policies.length === 0
        ? html`<div class="panel empty">
            No rebalancing schedule (<code
              >usdc-batch schedule add NAME --cron EXPR --rebalance POLICY.yaml</code
            >).
          </div>`
        : view.policies.map((p) => policyTable(p))
    }`;
  return pageShell({ title: 'Treasury', paused, body });
}

/**
 * A chain's state by the scheduled policies that name it: `below min` (with the policy and its min)
 * where its position is below one's min — the same flag as the policy table — else `ok`, `spare`, or
 * nothing when no scheduled policy names it.
 */
function chainFlags(view: TreasuryView, chain: TreasuryView['chains'][number]['chain']): Html | null {
  const named = view.policies.flatMap((p) =>
    p.chains.filter((c) => c.chain === chain && c.state !== null).map((c) => ({ policy: p.policy, ...c })),
  );
  if (named.length === 0) return null;
  const below = named.filter((c) => c.state === 'below_min');
  if (below.length > 0) {
    return html`${below.map(
      (c) =>
        html`<div>
          <span class="badge warn" data-flag="below_min">below min</span>
          <span class="muted">${c.policy}: min ${c.min ?? '-'}</span>
        </div>`,
    )}`;
  }
  const state = named.some((c) => c.state === 'spare') ? 'spare' : 'ok';
  return html`<span class="badge ${STATE_BADGE[state]}" data-flag="${state}">${state}</span>`;
}

function chainsTable(view: TreasuryView): Html {
  return html`<div class="scroll">
    <table class="rows" data-table="treasury">
      <thead>
        <tr>
          <th>chain</th>
          <th>balance</th>
          <th>incoming</th>
          <th>outgoing</th>
          <th>position</th>
          <th>state</th>
          <th>owners</th>
        </tr>
      </thead>
      <tbody>
        ${view.chains.map(
          (c) =>
            html`<tr data-chain="${c.chain}">
              <td data-label="chain">${c.chain}</td>
              <td data-label="balance" class="num">${c.balance ?? '-'}</td>
              <td data-label="incoming" class="num">${c.incoming ?? '-'}</td>
              <td data-label="outgoing" class="num">${c.outgoing ?? '-'}</td>
              <td data-label="position" class="num">${c.position ?? '-'}</td>
              <td data-label="state" class="state">${chainFlags(view, c.chain)}</td>
              <td data-label="owners" class="wrap">
                ${
                  c.error !== null
                    ? html`<span class="err">${c.error}</span>`
                    : c.owners.map(
                        (o) => html`<div><span class="mono clip">${o.address}</span> ${o.balance}</div>`,
                      )
                }
              </td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

/** `2025-06-01 02:00:00Z`; a dash when absent. */
function when(iso: string | null): string {
  return iso ? `${iso.slice(0, 10)} ${iso.slice(11, 19)}Z` : '–';
}

/** The schedule's next firing and what its last one did (with its batch, linked). */
function policyRuns(p: TreasuryView['policies'][number]): Html {
  const last =
    p.last_fired_at === null
      ? html`<span class="muted">never fired yet</span>`
      : html`${when(p.last_fired_at)}: <b data-last-status>${p.last_status ?? '?'}</b>${
            p.last_batch
              ? html` —
                  <a class="mono" href="/ui/batches/${encodeURIComponent(p.last_batch)}">${p.last_batch}</a>`
              : null
          }${p.last_error ? html` <span class="err">${p.last_error}</span>` : null}`;
  return html`<dl class="figures">
    <div>
      <dt>cron</dt>
      <dd><code>${p.cron}</code> (${p.tz})</dd>
    </div>
    <div>
      <dt>next firing</dt>
      <dd data-next-run>${when(p.next_run)}</dd>
    </div>
    <div class="wide">
      <dt>last run</dt>
      <dd data-last-run>${last}</dd>
    </div>
  </dl>`;
}

function policyTable(p: TreasuryView['policies'][number]): Html {
  return html`<div class="panel" data-policy="${p.policy}">
    <strong>${p.policy}</strong> <span class="muted">schedule ${p.schedule}</span>
    ${policyRuns(p)}
    <div class="scroll">
      <table class="rows">
        <thead>
          <tr>
            <th>chain</th>
            <th>min</th>
            <th>target</th>
            <th>state</th>
          </tr>
        </thead>
        <tbody>
          ${p.chains.map(
            (c) =>
              html`<tr data-chain="${c.chain}">
                <td data-label="chain">${c.chain}</td>
                <td data-label="min" class="num">${c.min ?? '-'}</td>
                <td data-label="target" class="num">${c.target}</td>
                <td data-label="state" class="state">
                  ${
                    c.state === null
                      ? html`<span class="muted">unknown</span>`
                      : html`<span class="badge ${STATE_BADGE[c.state]}">${c.state.replace('_', ' ')}</span>`
                  }
                </td>
              </tr>`,
          )}
        </tbody>
      </table>
    </div>
  </div>`;
}
