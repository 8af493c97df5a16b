import { formatUsdc } from '../domain/money.ts';
import type { TransferRoad } from '../domain/roads.ts';
import type { TransferState } from '../domain/transfer.ts';
import type { Approval } from '../store/approvals.ts';
import { openIntents, type Batch } from '../store/batch-record.ts';
import type { BatchFacts } from '../store/batch-reader.ts';
import type { PauseState } from '../store/pause-flag.ts';

/* A batch as readers see it (docs/http-api.md, the status document without its transfers). */

/** The submitted transfers' intents by where they are; they add up to `counts.submitted`. */
export type IntentCounts = { complete: number; failed: number; untracked: number; open: number };

/** The submitted transfers' sums (`totals.paid`). */
export type PaidTotals = { amount: string; fee: string; net_receive: string };

export type BatchSummary = {
  batch_id: string;
  created_at: string | null;
  source: string;
  /** The road its transfers take (docs/cctp.md); `service` for a batch enqueued before roads. */
  via: TransferRoad;
  /**
   * Who enqueued it (docs/access.md "Four eyes"): an HTTP credential's name, `cli:<name>`, `schedule:<name>`;
   * null for a batch enqueued before it was recorded.
   */
  submitted_by: string | null;
  complete: boolean;
  /**
   * Complete, and every submitted intent has a final status; null when some submitted intent can
   * never have one here (the service has no status route for it).
   */
  settled: boolean | null;
  held: boolean;
  /** Why the batch waits for approval; null when it is not held. */
  held_reason: string | null;
  /**
   * While held: the SHA-256 of the rows an approval would release (approval-digest.ts), which an
   * approval names; null when the batch is not held (or is still being written).
   */
  approval_digest: string | null;
  /** The approvals of its current (or last) hold, oldest first; only those of `approval_digest` count. */
  approvals: Approval[];
  /** Distinct approvers a hold of it needs, none of them its submitter. */
  approvals_required: number;
  counts: Record<TransferState, number>;
  intents: IntentCounts;
  /**
   * As planned (every row's amount and recorded estimate); `fee` and `net_receive` are null while a
   * transfer that may still be sent (queued, held, in progress) has no estimate yet. `paid`: the
   * submitted transfers only.
   */
  totals: { amount: string; fee: string | null; net_receive: string | null; paid: PaidTotals };
};

/** Processing paused (docs/operating.md, `pause`): since when (ISO) and by whom; null while it runs. */
export type PausedView = { since: string; by: string | null };

/** The pause flag as the status document shows it. */
export function pausedView(p: PauseState | null): PausedView | null {
  return p === null ? null : { since: new Date(p.since).toISOString(), by: p.by };
}

export function summaryView({ batch: b, approvals, digest }: BatchFacts): BatchSummary {
  const intents = intentCounts(b);
  const known = feesKnown(b);
  return {
    batch_id: b.id,
    created_at: b.createdAt === null ? null : new Date(b.createdAt).toISOString(),
    source: b.source,
    via: b.via,
    submitted_by: b.submittedBy,
    complete: b.complete,
    settled: isSettled(b.complete, intents),
    held: b.held,
    held_reason: heldReason(b),
    approval_digest: b.held ? digest : null,
    approvals,
    approvals_required: b.approvalsRequired,
    counts: { ...b.counts },
    intents,
    totals: {
      amount: formatUsdc(b.amount),
      fee: known ? formatUsdc(b.fee) : null,
      net_receive: known ? formatUsdc(b.netReceive) : null,
      paid: {
        amount: formatUsdc(b.paid.amount),
        fee: formatUsdc(b.paid.fee),
        net_receive: formatUsdc(b.paid.netReceive),
      },
    },
  };
}

/** The submitted transfers' intents: `open` is those not yet final nor untracked. */
export function intentCounts(b: Pick<Batch, 'intents' | 'counts'>): IntentCounts {
  const { complete, failed, untracked } = b.intents;
  return { complete, failed, untracked, open: openIntents(b) };
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

/**
 * Whether every transfer that may still be sent (queued, held, in progress) has its fee estimate,
 * so that the planned fee and net are known: the batch's `unestimated` count is 0. A batch recorded
 * before that count existed is known once none of its transfers may still be sent.
 */
function feesKnown(b: Batch): boolean {
  if (b.unestimated !== null) return b.unestimated === 0;
  return b.counts.queued + b.counts.in_progress === 0;
}

/** A held batch's reason; one held by code that recorded none was held at the approval threshold. */
function heldReason(b: Batch): string | null {
  if (!b.held) return null;
  return b.heldReason ?? 'APPROVAL_THRESHOLD_USDC: waiting for approval';
}
