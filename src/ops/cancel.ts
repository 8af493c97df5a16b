import { recordAudit } from '../store/audit.ts';
import { keys } from '../store/keys.ts';
import { releaseOwnerReservation } from '../store/owner-balance.ts';
import { createTransferStore } from '../store/transfer-store.ts';
import { requireBatch, type OpsDeps } from './ops-deps.ts';
import { NotFoundError } from './ops-error.ts';

/** A cancelled row's owner balance, if one was reserved for it, goes back. */
async function releaseReservation(deps: OpsDeps, batchId: string, id: string): Promise<void> {
  const rec = await createTransferStore({ redis: deps.redis, prefix: deps.prefix }).load(batchId, id);
  if (rec) await releaseOwnerReservation(deps.redis, deps.prefix, rec);
}

/** A cancel that made the batch's last open transfer final completed it: its callback goes out. */
async function announceCompletion(deps: OpsDeps, batchId: string, generation: number | null): Promise<void> {
  if (generation !== null) await deps.jobs.batchCompleted?.(batchId, generation);
}

/**
 * Cancels the batch's transfers that have not been sent: those still `queued` become `cancelled`,
 * a final state that `retry` never re-queues (docs/promises.md, promise 5). Transfers
 * in progress are not cut off; a queued transfer holds no live payload. The batch's hold is left as
 * it is.
 */
export async function cancelBatch(deps: OpsDeps, batchId: string): Promise<{ cancelled: number }> {
  await requireBatch(deps, batchId);
  const k = keys(deps.prefix);
  const store = createTransferStore({ redis: deps.redis, prefix: deps.prefix });
  let cancelled = 0;
  for (;;) {
    const ids = await deps.redis.zrange(k.batchState(batchId, 'queued'), 0, 999);
    if (ids.length === 0) break;
    let moved = 0;
    for (const id of ids) {
      const res = await store.transition(batchId, id, {
        expected: ['queued'],
        to: 'cancelled',
        fields: { error: { code: 'cancelled', message: `cancelled by ${deps.actor}` }, waitReason: null },
      });
      if (res.ok) {
        moved++;
        await releaseReservation(deps, batchId, id);
        await announceCompletion(deps, batchId, res.completedGeneration);
      }
    }
    cancelled += moved;
    if (moved === 0) break;
  }
  // A held batch stays held: only `approve` releases a hold (docs/promises.md, promise 5). Setting
  // `held` to 0 here once let `retry` re-queue the cancelled rows with jobs, paying them unapproved.
  // A cancel that cancelled nothing changed nothing: not audited (docs/audit.md).
  if (cancelled > 0) {
    await recordAudit(deps, { who: deps.actor, action: 'cancel', batch: batchId, detail: { cancelled } });
  }
  return { cancelled };
}

/**
 * `cancel BATCH --transfer ID…`: cancels single unsent rows (`queued` → `cancelled`),
 * typically of a held batch whose other rows are to be approved; the batch's hold is left as it is.
 * Every id must belong to the batch (else nothing is cancelled); a row that is not `queued` any more
 * is not cut off and is reported with its state.
 */
export async function cancelTransfers(
  deps: OpsDeps,
  batchId: string,
  transferIds: readonly string[],
): Promise<{ cancelled: string[]; skipped: { id: string; state: string }[] }> {
  await requireBatch(deps, batchId);
  const store = createTransferStore({ redis: deps.redis, prefix: deps.prefix });
  const unique = [...new Set(transferIds)];
  for (const id of unique) {
    if (!(await store.load(batchId, id))) {
      throw new NotFoundError('USDC_TRANSFER_NOT_FOUND', `transfer ${id} is not in batch ${batchId}`);
    }
  }
  const cancelled: string[] = [];
  const skipped: { id: string; state: string }[] = [];
  for (const id of unique) {
    const res = await store.transition(batchId, id, {
      expected: ['queued'],
      to: 'cancelled',
      fields: { error: { code: 'cancelled', message: `cancelled by ${deps.actor}` }, waitReason: null },
    });
    if (res.ok) {
      cancelled.push(id);
      await releaseReservation(deps, batchId, id);
      await announceCompletion(deps, batchId, res.completedGeneration);
    } else skipped.push({ id, state: res.current ?? 'missing' });
  }
  if (cancelled.length > 0) {
    await recordAudit(deps, {
      who: deps.actor,
      action: 'cancel',
      batch: batchId,
      detail: { cancelled, not_cancelled: skipped },
    });
  }
  return { cancelled, skipped };
}
