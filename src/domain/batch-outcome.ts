import type { TransferState } from './transfer.ts';

/**
 * How a batch came out, in a few words and one tone, for what people read (`/ui`, `batches`,
 * `status`). `complete` only says every transfer is final and `settled` only that the submitted
 * intents are: neither says the payments went through. The outcome does: `all paid`, or what did
 * not go well, e.g. `1 failed, 2 need review`, in the tone of its worst part.
 */
export type BatchOutcome = { readonly text: string; readonly tone: OutcomeTone };

/**
 * Worst first: `needs_review` (money may have moved, a person must look), `failed` (a transfer, or
 * a submitted intent that failed afterwards), `rejected` (refused before anything was signed);
 * then `in_progress` (nothing wrong so far), `paid` (every transfer submitted), `cancelled` (every
 * transfer submitted or cancelled, some cancelled: what an operator asked for, not a failure),
 * `empty`.
 */
export type OutcomeTone =
  'needs_review' | 'failed' | 'rejected' | 'in_progress' | 'paid' | 'cancelled' | 'empty'; // prettier-ignore

/** What the outcome is made of: the status document's `complete`, `counts` and `intents.failed`. */
export type OutcomeFacts = {
  readonly complete: boolean;
  readonly counts: Readonly<Record<TransferState, number>>;
  readonly intents: { readonly failed: number };
};

export function batchOutcome(b: OutcomeFacts): BatchOutcome {
  const c = b.counts;
  const total = c.queued + c.in_progress + c.submitted + c.failed + c.rejected + c.needs_review + c.cancelled;
  const parts: { n: number; text: string; tone: OutcomeTone }[] = [
    { n: c.needs_review, text: `${c.needs_review} ${c.needs_review === 1 ? 'needs' : 'need'} review`, tone: 'needs_review' },
    { n: c.failed, text: `${c.failed} failed`, tone: 'failed' },
    { n: b.intents.failed, text: `${b.intents.failed} ${b.intents.failed === 1 ? 'intent' : 'intents'} failed after submission`, tone: 'failed' },
    { n: c.rejected, text: `${c.rejected} rejected`, tone: 'rejected' },
  ]; // prettier-ignore
  const problems = parts.filter((p) => p.n > 0);
  // Cancelled rows are said, never as a problem: they take no part in the tone.
  const cancelled = c.cancelled > 0 ? `${c.cancelled} cancelled` : undefined;
  const worst = problems[0];
  if (worst) {
    const text = [...problems.map((p) => p.text), ...(cancelled ? [cancelled] : [])].join(', ');
    return { text: b.complete ? text : `${text} so far`, tone: worst.tone };
  }
  if (total === 0) return { text: 'no transfers', tone: 'empty' };
  if (c.submitted === total) return { text: 'all paid', tone: 'paid' };
  if (c.cancelled === total) return { text: 'all cancelled', tone: 'cancelled' };
  if (c.submitted + c.cancelled === total) {
    return { text: `${c.submitted} paid, ${cancelled ?? ''}`, tone: 'cancelled' };
  }
  const paid = `${c.submitted} of ${total - c.cancelled} paid so far`;
  return { text: cancelled ? `${paid}, ${cancelled}` : paid, tone: 'in_progress' };
}
