import { formatUsdc } from '../domain/money.ts';
import { bookAddressOf } from '../domain/recipient-key.ts';
import { current, moveStep, saveEstimateNow, type Ctx } from './context.ts';
import type { StepOutcome } from './pipeline-deps.ts';
import type { ClearanceFacts } from '../store/batch-hold.ts';

/**
 * The batch's hold, approval and control marks and the recipient's tombstone, in one read
 * (src/store/batch-hold.ts); undefined without an approval gate.
 */
export async function readClearance(ctx: Ctx): Promise<ClearanceFacts | undefined> {
  const rec = current(ctx);
  return await ctx.deps.approvals?.facts(rec.batchId, bookAddressOf(rec).key);
}

/**
 * The last look before a transfer's first payload is made (docs/promises.md, promise 5, and a race
 * between `recipients remove` and a batch in flight): a transfer whose batch is held, or whose
 * recipient was removed from the address book after the batch was enqueued or last approved, is
 * not signed. It goes back to `queued` with the reason (never `failed`: nothing was wrong with it),
 * in a new round so that `approve` gives it a new job, and its batch is held — the same approval
 * releases it. A transfer that already has a payload never comes here: what was signed is not cut
 * off. The run saves its fee estimate just before that transition. Returns the outcome when it held
 * the transfer, undefined when it may go on. Without an approval gate (deps.approvals, absent in
 * tests that build a pipeline without Redis-side approvals: readClearance gives no facts) nothing
 * is checked. `facts`: as readClearance read them, with nothing since that may have held the batch.
 */
export async function holdUnlessCleared(
  ctx: Ctx,
  facts: ClearanceFacts | undefined,
): Promise<StepOutcome | undefined> {
  const { deps } = ctx;
  const rec = current(ctx);
  const gate = deps.approvals;
  if (!gate || !facts) return undefined;
  const removedSince =
    facts.removedAt !== null && facts.removedAt >= Math.max(facts.createdAt, facts.approvedAt);
  if (!facts.held && !removedSince) return undefined;
  const batchReason = removedSince
    ? `removed recipients: ${rec.recipient} (line ${rec.line}, ${formatUsdc(rec.amount)} USDC) was removed from the address book while the batch was in flight`
    : undefined;
  await saveEstimateNow(ctx);
  const res = await moveStep(ctx, {
    expected: ['in_progress'],
    to: 'queued',
    fields: {
      waitReason: removedSince
        ? 'held for approval: its recipient was removed from the address book'
        : 'held for approval: the batch is held',
      round: rec.steps.round + 1,
      // Waiting for an approval is not a transient failure: its 3-minute clock starts when it goes.
      firstSeenAt: null,
    },
  });
  if (!res.ok) return { kind: 'done', state: res.current ?? 'failed' };
  // After the transfer is queued: an `approve` that runs in between finds the batch not held yet,
  // and one that runs after finds this transfer queued and gives it its job.
  if (batchReason) await gate.hold(rec.batchId, batchReason);
  deps.logger.warn(
    { batchId: rec.batchId, transferId: rec.id, removedSince },
    'transfer held for approval before signing',
  );
  // The record the run carries, the transition laid over it (its wait reason): what the job reports.
  return { kind: 'done', state: 'queued', record: ctx.run?.rec ?? res.record };
}
