import { batchOutcome } from '../domain/batch-outcome.ts';
import type { BatchSummary, PausedView } from '../present/batch-summary.ts';
import type { ScreeningView } from '../present/screening-view.ts';

/* A batch's settlement and totals as the human output of `status`, `batches` and `enqueue --wait` shows them. */

/** `yes`, `no`, or (null: some intent cannot be followed) `unknown (no status route)`. */
export function settledText(settled: boolean | null): string {
  return settled === null ? 'unknown (no status route)' : settled ? 'yes' : 'no';
}

/**
 * How the batch came out, e.g. `all paid`, `1 failed, 2 need review`, `3 of 5 paid so far`:
 * `complete` and `settled` say nothing of whether the payments went through.
 */
export function outcomeText(b: BatchSummary): string {
  return batchOutcome(b).text;
}

/** What the submitted intents' statuses say, e.g. `intents: 5 complete, 1 failed, 2 not final`. */
export function intentsText(i: BatchSummary['intents']): string {
  const parts = [`${i.complete} complete`, `${i.failed} failed`, `${i.open} not final`];
  if (i.untracked > 0) parts.push(`${i.untracked} without a status route`);
  return `intents: ${parts.join(', ')}`;
}

/**
 * Planned and paid totals on two lines. A planned fee not known yet (a transfer that may still be
 * sent has no estimate) is a dash and says so: never 0.00, which would read as a free payroll.
 */
export function totalsLines(t: BatchSummary['totals']): string[] {
  const planned =
    t.fee === null || t.net_receive === null
      ? `planned  amount ${t.amount} USDC  fee —  net —  (not estimated yet: each transfer is estimated before it is sent)`
      : `planned  amount ${t.amount} USDC  fee ${t.fee}  net ${t.net_receive}`;
  return [
    planned,
    `paid     amount ${t.paid.amount} USDC  fee ${t.paid.fee}  net ${t.paid.net_receive}  (submitted transfers)`,
  ];
}

/** `2025-06-01T12:34:56Z`: an ISO time to the second. */
function toSecond(iso: string): string {
  return iso.replace(/\.[0-9]+Z$/, 'Z');
}

/** `since 2025-06-01T12:34:56Z by cli:alice`: when and by whom processing was paused. */
export function pausedSince(p: PausedView): string {
  return `since ${toSecond(p.since)} by ${p.by ?? 'someone (not recorded)'}`;
}

/** The line every command that shows batches prints while processing is paused. */
export function pausedLine(p: PausedView): string {
  return `processing is PAUSED ${pausedSince(p)}: nothing is sent until \`usdc-batch resume\``;
}

/**
 * What the workers screen with (docs/screening.md), e.g.
 * `screening: sdn.xml of 2026-11-20 (1,204 addresses); on-chain checks on`, or `STALE` when a list is
 * older than SCREENING_MAX_AGE (nothing is signed then), or `no sanctions list` when none is loaded.
 */
export function screeningLine(s: ScreeningView): string {
  const lists =
    s.lists.length === 0
      ? 'no sanctions list'
      : s.lists
          .map((l) => `${l.name} of ${l.date} (${l.addresses.toLocaleString('en-US')} addresses)`)
          .join(', ');
  const stale = s.stale ? ' STALE: nothing is signed until a fresh list is loaded;' : ';';
  return `screening: ${lists}${stale} on-chain checks ${s.onchain ? 'on' : 'off'}`;
}
