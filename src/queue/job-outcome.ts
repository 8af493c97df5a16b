import { UnrecoverableError } from 'bullmq';
import type { TransferState } from '../domain/transfer.ts';
import type { JobOutcome } from '../present/transfer-view.ts';

/* What a transfer job's end does in BullMQ; the job's result itself is built by src/present/transfer-view.ts (jobOutcome). */

/** Final states that put the job in BullMQ's failed set: nothing was paid, or nobody knows. */
export const FAILING_STATES: readonly TransferState[] = ['failed', 'rejected', 'needs_review', 'cancelled'];

export function failsJob(state: TransferState): boolean {
  return FAILING_STATES.includes(state);
}

/** `failedReason`: `<state>: <code>: <message>`, e.g. `failed: refused: the service refused …`. */
export function failedReasonOf(o: Pick<JobOutcome, 'state' | 'error'>): string {
  return o.error ? `${o.state}: ${o.error.code}: ${o.error.message}` : `${o.state}: no error recorded`;
}

/**
 * The error a job fails with when its transfer ended failed, rejected, needs_review or cancelled: BullMQ's
 * UnrecoverableError, so the queue never retries it (the pipeline already decided), with no stack
 * (the job hash would keep a stack of the worker's own frames, which says nothing about the payout).
 */
export function finalFailure(reason: string): UnrecoverableError {
  const err = new UnrecoverableError(reason.slice(0, 1000));
  err.stack = '';
  return err;
}
