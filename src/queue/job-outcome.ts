import { UnrecoverableError } from 'bullmq';
import type { TransferState } from '../domain/transfer.ts';
import { transferView, type TransferView } from '../store/batch-reader.ts';
import type { TransferRecord } from '../store/transfer-record.ts';

/**
 * A transfer job's result (docs/data-model.md "BullMQ jobs"): the transfer as the job left it, in the
 * status document's names and forms (built from `transferView`, never spelled twice). It is the
 * job's return value — of a completed job, and of a failed one too (job-hash.ts writes it just
 * before the job fails), so an ops tool reads one field whatever the job's fate. It is never
 * rewritten: the intent's final status reaches the job's log as one more line (intent-job-log.ts).
 */
export type JobOutcome = {
  readonly batch_id: string;
  readonly transfer_id: string;
  readonly line: number;
  readonly state: TransferState;
  readonly intent_id: string | null;
  readonly intent_status: string | null;
  readonly tx_hash: string | null;
  readonly tx_signature: string | null;
  readonly owner: string | null;
  readonly from: string;
  readonly to: string;
  readonly amount: string;
  readonly recipient: string;
  readonly fee: TransferView['fee'];
  readonly attempts: number;
  readonly error: TransferView['error'];
  readonly new_recipient: boolean;
};

export function jobOutcome(rec: TransferRecord): JobOutcome {
  const v = transferView(rec);
  return {
    batch_id: rec.batchId,
    transfer_id: v.id,
    line: v.line,
    state: v.state,
    intent_id: v.intent_id,
    intent_status: v.intent_status,
    tx_hash: v.tx_hash,
    tx_signature: v.tx_signature,
    owner: v.owner,
    from: v.from,
    to: v.to,
    amount: v.amount,
    recipient: v.recipient,
    fee: v.fee,
    attempts: v.attempts,
    error: v.error,
    new_recipient: v.new_recipient,
  };
}

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
