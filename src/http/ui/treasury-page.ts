import type { PausedView } from '../../store/batch-reader.ts';
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

function policyTable(p: TreasuryView['policies'][number]): Html {
  return html`<div class="panel" data-policy="${p.policy}">
    <strong>${p.policy}</strong> <span class="muted">schedule ${p.schedule}</span>
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
