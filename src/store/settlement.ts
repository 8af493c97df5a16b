import { formatUsdc } from '../domain/money.ts';

/*
 * What a batch paid and how far its intents have settled, kept as counters in the batch record
 * (`paid_*`, `intents_*`; docs/data-model.md) by the same Lua scripts that change a transfer's
 * state, fees or intent status — so a read of a 100,000-row batch is one HGETALL, never a scan.
 *
 * Each script measures what the transfer adds to the counters before and after its change and
 * applies the difference. Only a `submitted` transfer adds anything: its amount, fee and net to
 * `paid_*`, and one to `intents_complete`, `intents_failed` or (its status route answered 404)
 * `intents_untracked` once its intent is final or cannot be followed. The scripts' shared functions,
 * which add amounts as exact decimal strings, are scripts/includes/settlement.lua.
 */

/** The status document's `totals.paid`: the `submitted` transfers only. */
export type PaidTotals = { amount: string; fee: string; net_receive: string };

/**
 * Where the submitted transfers' intents are: `complete` and `failed` are final statuses of the
 * service's status route, `untracked` ones cannot be followed (the route answered 404), `open`
 * ones are not final yet (pending, detected, minted, or not asked yet). They add up to
 * `counts.submitted`.
 */
export type IntentCounts = { complete: number; failed: number; untracked: number; open: number };

const micro = (v: string | undefined): bigint => BigInt(v && /^-?[0-9]+$/.test(v) ? v : '0');
const count = (v: string | undefined): number => Math.max(0, Number(v ?? 0) || 0);

export function paidTotals(b: Record<string, string>): PaidTotals {
  return {
    amount: formatUsdc(micro(b['paid_amount'])),
    fee: formatUsdc(micro(b['paid_fee'])),
    net_receive: formatUsdc(micro(b['paid_net_receive'])),
  };
}

export function intentCounts(b: Record<string, string>): IntentCounts {
  const complete = count(b['intents_complete']);
  const failed = count(b['intents_failed']);
  const untracked = count(b['intents_untracked']);
  const open = Math.max(0, count(b['n_submitted']) - complete - failed - untracked);
  return { complete, failed, untracked, open };
}

/**
 * `settled` (docs/http-api.md): true once the batch is complete and every submitted intent has a
 * final status; null when that can never be known because the service had no status route for
 * some of them; false otherwise.
 */
export function isSettled(complete: boolean, intents: IntentCounts): boolean | null {
  if (!complete || intents.open > 0) return false;
  return intents.untracked > 0 ? null : true;
}
