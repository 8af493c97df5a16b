import { createHash, hash } from 'node:crypto';
import type { TransferRequest } from '../domain/transfer.ts';

/**
 * sha256 of the normalised rows, in order: the row's own id (empty when it has none), upper-case
 * chain codes, the amount in micro-USDC, the normalised recipient (EIP-55 for EVM) and the memo.
 * Everything that only changes the file's bytes — a BOM, line endings, column order, the case of
 * chain codes, blank lines — leaves it unchanged; any change to what would be paid changes it.
 * The road (`via`) is not in it: it says how the rows are paid, not what is paid. The same rows asked
 * again on another road derive the same batch id and are refused as a conflict (enqueue-batch.ts),
 * where a digest with the road in it would derive a second batch paying the same rows again
 * (docs/cctp.md "Choosing it"); and batches written before roads keep their digests.
 */
export function batchDigest(transfers: readonly TransferRequest[]): string {
  const hash = createHash('sha256');
  for (const t of transfers) {
    // JSON quoting keeps a memo containing the separator from colliding with another row.
    hash.update(
      JSON.stringify([
        t.hasPayoutId ? t.id : '',
        t.from,
        t.to,
        t.amount.toString(),
        t.recipient,
        t.memo ?? '',
      ]),
    );
    hash.update('\n');
  }
  return hash.digest('hex');
}

/** The batch id used when none is given: stable for the same rows. */
export function derivedBatchId(digest: string): string {
  return `b-${digest.slice(0, 16)}`;
}

/** Key of the likely-duplicate rule: the payment's (from, to, amount, recipient). */
export function paymentKey(t: Pick<TransferRequest, 'from' | 'to' | 'amount' | 'recipient'>): string {
  return `${t.from}|${t.to}|${t.amount}|${t.recipient}`;
}

/** sha256 of the payment key: its field in the day's fingerprint set (`P:fpd:<day>`) of recent transfers. */
export function paymentFingerprint(t: Pick<TransferRequest, 'from' | 'to' | 'amount' | 'recipient'>): string {
  // One-shot: computed for every row of a batch, and without a Hash object per call it is about
  // twice as fast.
  return hash('sha256', paymentKey(t), 'hex');
}
