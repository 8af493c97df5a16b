import { randomUUID } from 'node:crypto';
import { controlDigestOf, type ControlConfig } from '../config/control-settings.ts';
import { bookAddressOf } from '../domain/recipient-key.ts';
import { decideHolds, screenRecipients, type HoldConfig } from '../ingest/hold-rules.ts';
import type { TransferJobSpec } from '../domain/transfer-jobs.ts';
import { recordAudit } from '../store/audit.ts';
import { markBatchControls } from '../store/batch-control-marks.ts';
import { holdBatch } from '../store/batch-hold.ts';
import type { Batch } from '../store/batch-record.ts';
import { keys } from '../store/keys.ts';
import { RETRY_CLEARED, savedSteps } from '../store/saved-steps.ts';
import type { TransferRecord } from '../store/transfer-record.ts';
import { createTransferStore } from '../store/transfer-store.ts';
import { requireBatch, type OpsDeps } from './ops-deps.ts';

/**
 * Re-queues the batch's `failed` transfers only (never submitted, never needs_review, never
 * cancelled: `cancelled` is a state of its own, and a row cancelled by an older version, stored as
 * `failed` with error code `cancelled`, is left alone too — LEGACY_CANCELLED). The batch
 * is re-opened (complete = false) before this returns. The re-queued rows pass the same holds as
 * new ones (docs/promises.md, promise 5: the approval threshold over 24 hours, the address book); a
 * held batch — held before, or by this retry — gets no jobs until approved.
 */
/**
 * The error code older versions gave a cancelled transfer, which they stored as `failed`: such a
 * row reads as it was written (state `failed`, error `cancelled`), and retry never sends it.
 */
export const LEGACY_CANCELLED = 'cancelled';

export async function retryBatch(
  deps: OpsDeps & { readonly config: HoldConfig & ControlConfig },
  batchId: string,
): Promise<{ requeued: number; heldReason: string | null }> {
  const batch = await requireBatch(deps, batchId);
  const k = keys(deps.prefix);
  const store = createTransferStore({ redis: deps.redis, prefix: deps.prefix });
  const ids = await deps.redis.zrange(k.batchState(batchId, 'failed'), 0, -1);
  const failed: TransferRecord[] = [];
  for (const id of ids) {
    const rec = await store.load(batchId, id);
    if (rec?.state === 'failed' && rec.errorCode !== LEGACY_CANCELLED) failed.push(rec);
  }
  // Decided before any row is re-queued: a row must never get a job the hold would have denied.
  const heldNow = batch.held ? null : await holdRetried(deps, batch, failed);
  const held = batch.held || heldNow !== null;
  const byRound = new Map<number, TransferJobSpec[]>();
  let requeued = 0;
  for (const rec of failed) {
    const id = rec.id;
    const round = savedSteps(rec).round + 1;
    const res = await store.transition(batchId, id, {
      expected: ['failed'],
      to: 'queued',
      fields: { ...RETRY_CLEARED, round, reestimate: true },
    });
    if (!res.ok) continue;
    requeued++;
    const list = byRound.get(round) ?? [];
    list.push({ transferId: id, from: rec.from, to: rec.to, amount: rec.amount });
    byRound.set(round, list);
  }
  // The re-queued rows were judged under this process's controls: a worker with others judges them again
  // (src/worker/batch-controls.ts).
  if (requeued > 0) await markBatchControls(deps.redis, deps.prefix, batchId, controlDigestOf(deps.config));
  if (!held) {
    for (const [round, transfers] of byRound) await deps.jobs.addTransfers(batchId, transfers, round);
  }
  // A retry that re-queued nothing and held nothing changed nothing: not audited (docs/audit.md).
  if (requeued > 0 || heldNow)
    await recordAudit(deps, {
      who: deps.actor,
      action: 'retry',
      batch: batchId,
      detail: { requeued, ...(heldNow ? { held_reason: heldNow } : {}) },
    });
  return {
    requeued,
    heldReason: held ? ((await requireBatch(deps, batchId)).heldReason ?? '') : null,
  };
}

/**
 * The holds of new rows, applied to the rows `retry` re-queues (each retry is its own entry in the
 * rolling approval window). Holds the batch and returns the reason, or null when none applies.
 */
async function holdRetried(
  deps: OpsDeps & { readonly config: HoldConfig },
  batch: Batch,
  rows: readonly TransferRecord[],
): Promise<string | null> {
  const batchId = batch.id;
  if (rows.length === 0) return null;
  const now = (deps.now ?? Date.now)();
  // A rebalancing batch pays only the treasury's own addresses: always known recipients.
  const own = batch.source === 'rebalance' ? new Set(rows.map((r) => bookAddressOf(r).key)) : undefined;
  const submitter = batch.submittedBy ?? undefined;
  const screen = await screenRecipients(deps.redis, deps.prefix, rows, { own, submitter });
  const decision = await decideHolds(
    { redis: deps.redis, prefix: deps.prefix, config: deps.config, now },
    rows,
    screen,
    { batchId, member: `${batchId}#retry-${now}-${randomUUID().slice(0, 8)}` },
  );
  if (decision.reasons.length === 0) return null;
  const reason = `retry: ${decision.reasons.join('; ')}`;
  await holdBatch(deps.redis, deps.prefix, batchId, reason);
  return reason;
}
