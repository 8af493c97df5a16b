import { batchOutcome } from '../domain/batch-outcome.ts';
import type { BatchSummary } from '../store/batch-reader.ts';

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

/** Planned and paid totals on two lines. */
export function totalsLines(t: BatchSummary['totals']): string[] {
  return [
    `planned  amount ${t.amount} USDC  fee ${t.fee}  net ${t.net_receive}`,
    `paid     amount ${t.paid.amount} USDC  fee ${t.paid.fee}  net ${t.paid.net_receive}  (submitted transfers)`,
  ];
}
