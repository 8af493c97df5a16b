import type { Chain } from './chains.ts';

export const TRANSFER_STATES = [
  'queued',
  'in_progress',
  'submitted',
  'failed',
  'rejected',
  'needs_review',
  'cancelled',
] as const;
export type TransferState = (typeof TRANSFER_STATES)[number];
/**
 * Every state a transfer can end in. `cancelled` is an operator's `cancel` of a transfer that was
 * never sent: final like the others, and never re-queued by `retry` (docs/promises.md).
 */
export const FINAL_STATES: readonly TransferState[] = [
  'submitted',
  'failed',
  'rejected',
  'needs_review',
  'cancelled',
];
export function isFinalState(state: TransferState): boolean {
  return FINAL_STATES.includes(state);
}

/** Intent statuses of the service's status route; any other string is kept but is not final. */
export const FINAL_INTENT_STATUSES = ['complete', 'failed'] as const;
/** Whether the status route's status is final (an intent not yet polled, null, is not). */
export function isFinalIntentStatus(status: string | null): boolean {
  return status !== null && (FINAL_INTENT_STATUSES as readonly string[]).includes(status);
}

/** A validated row: what ingest produces and what a worker executes. */
export type TransferRequest = {
  /** The payout id (CSV `id`), or one derived from the line (`line-12`) when the row has none. */
  readonly id: string;
  /** Whether `id` came from the input (a payout id, paid at most once across batches). */
  readonly hasPayoutId: boolean;
  /** Line in the CSV (header is line 1); for JSON, the transfer's 1-based position in `transfers`. */
  readonly line: number;
  readonly from: Chain;
  readonly to: Chain;
  /** micro-USDC */
  readonly amount: bigint;
  readonly recipient: string;
  readonly memo: string | null;
};

export type BatchSource = 'csv' | 'http' | 'schedule' | 'rebalance';
