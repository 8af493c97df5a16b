import { createHash } from 'node:crypto';

/*
 * What an approval names (docs/access.md "Four eyes"): the batch's `approval_digest`, the lowercase hex
 * SHA-256 of the lines `id,from,to,amount,recipient\n` of its `queued` transfers — those an approval
 * would release — in line order, each value exactly as the status document shows it (the amount as
 * a decimal string, `900.00`). A transfer cancelled, or re-queued by `retry`, since changes it.
 */

/** One reviewed row, its values as the status document shows them. */
export type ReviewedRow = {
  readonly id: string;
  readonly from: string;
  readonly to: string;
  readonly amount: string;
  readonly recipient: string;
};

/** The line of one row in the digest. */
export function digestLine(row: ReviewedRow): string {
  return `${row.id},${row.from},${row.to},${row.amount},${row.recipient}\n`;
}

/** The digest of rows given in line order, a page at a time (a held batch may have 100,000). */
export function createApprovalDigest(): { add(rows: Iterable<ReviewedRow>): void; hex(): string } {
  const hash = createHash('sha256');
  return {
    add(rows) {
      for (const row of rows) hash.update(digestLine(row), 'utf8');
    },
    hex: () => hash.digest('hex'),
  };
}

/** The approval digest of these rows, in the order given. */
export function approvalDigest(rows: Iterable<ReviewedRow>): string {
  const d = createApprovalDigest();
  d.add(rows);
  return d.hex();
}

/** A digest as an approval gives it: 64 hex digits (any case). */
export function isDigest(text: unknown): text is string {
  return typeof text === 'string' && /^[0-9a-fA-F]{64}$/.test(text);
}
