import { formatUsdc } from '../domain/money.ts';
import type { TransferRequest } from '../domain/transfer.ts';
import { paymentKey } from './batch-identity.ts';
import type { IngestIssue } from './ingest-issue.ts';
import { IssueList } from './issue-list.ts';

/**
 * The in-file half of the likely-duplicate rule (docs/operating.md "CSV format"): a row without id that repeats the
 * (from, to, amount, recipient) of another row of the same input. A row with an id is the payer's
 * own key and never a duplicate itself, but it makes an id-less copy of it one; of several id-less
 * copies the first is kept. `duplicates` lists the first of them (MAX_LISTED_ISSUES), `count` all.
 */
export function findInFileDuplicates(transfers: TransferRequest[]): {
  kept: TransferRequest[];
  duplicates: IngestIssue[];
  count: number;
} {
  // Keyed by the id-less rows only (few, in most files): a 100,000-row file with ids builds nothing.
  const first = new Map<string, { line: number; withId: boolean }>();
  for (const t of transfers) {
    if (t.hasPayoutId) continue;
    const key = paymentKey(t);
    if (!first.has(key)) first.set(key, { line: t.line, withId: false });
  }
  if (first.size === 0) return { kept: transfers, duplicates: [], count: 0 };
  for (const t of transfers) {
    if (!t.hasPayoutId) continue;
    const seen = first.get(paymentKey(t));
    if (seen && !seen.withId) first.set(paymentKey(t), { line: t.line, withId: true });
  }
  const kept: TransferRequest[] = [];
  const duplicates = new IssueList();
  for (const t of transfers) {
    const original = t.hasPayoutId ? undefined : first.get(paymentKey(t));
    if (original && original.line !== t.line) {
      duplicates.push({
        line: t.line,
        column: null,
        message: `likely duplicate of line ${original.line}: same from, to, amount (${formatUsdc(t.amount)}) and recipient, and no id`,
      });
    } else kept.push(t);
  }
  return { kept, duplicates: duplicates.listed, count: duplicates.count };
}
