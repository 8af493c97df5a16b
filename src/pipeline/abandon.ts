import { isEvmChain } from '../domain/chains.ts';
import { isFinalState } from '../domain/transfer.ts';
import { withEvidence } from '../store/transfer-evidence.ts';
import type { RunRecord, SavedSteps, StepsPatch } from '../store/saved-steps.ts';
import type { TransferRecord } from '../store/transfer-record.ts';
import { doubtOf } from './evm/evm-settle-review.ts';
import type { PipelineDeps, StepOutcome } from './pipeline-deps.ts';
import { policyOf } from './policy.ts';

/**
 * The queue gave up on a transfer's job by itself (stalled too often, attempts exhausted): decide
 * its final state from its saved steps so that no row stays `queued` or `in_progress` (promise 2).
 * A payload that may have been processed makes it `needs_review`; otherwise nothing moved: `failed`.
 * `jobRound` guards against an old job of an earlier round finalizing a transfer that `retry`
 * re-opened. `rec` is the transfer as the queue layer read it (no run holds it). Returns how it
 * ended the transfer (the record as the transition left it), or undefined when it changed nothing.
 */
export async function abandonTransfer(
  deps: PipelineDeps,
  rec: RunRecord | undefined,
  why: { readonly reason: string; readonly jobRound?: number | undefined },
): Promise<(StepOutcome & { kind: 'done' }) | undefined> {
  if (!rec || isFinalState(rec.state)) return undefined;
  const { batchId, id: transferId, steps } = rec;
  if (why.jobRound !== undefined && steps.round !== why.jobRound) return undefined;
  const mayHaveMoved = steps.uncertain || steps.sendState === 'sending';
  const settleAt = mayHaveMoved ? payloadSettleAt(deps, steps) : null;
  const to = mayHaveMoved ? 'needs_review' : 'failed';
  const error = mayHaveMoved
    ? {
        code: 'abandoned_uncertain',
        message: `${why.reason}; a send may have been processed: check the chain, then resolve`,
      }
    : { code: 'abandoned', message: `${why.reason}; nothing was paid` };
  const fields: StepsPatch = {
    error,
    waitReason: null,
    ...(settleAt === null ? {} : { settleAt }),
    evidence: withEvidence(rec.evidence, (deps.now ?? Date.now)(), `${to}: ${error.code}: ${error.message}`),
  };
  const res = await deps.store.transition(batchId, transferId, {
    expected: ['queued', 'in_progress'],
    to,
    fields,
    carried: rec,
  });
  if (!res.ok) return undefined;
  deps.logger.warn(
    { batchId, transferId, state: to, code: error.code, reason: error.message },
    `transfer ${to}: finalized an abandoned transfer`,
  );
  if (mayHaveMoved) await presumeUsed(deps, rec, steps);
  else await deps.evm?.balances?.releaseOf(rec);
  if (res.completedGeneration !== null)
    await deps.hooks?.onBatchCompleted?.(batchId, res.completedGeneration);
  if (mayHaveMoved) await deps.hooks?.onNeedsReview?.(batchId, transferId, settleAt);
  // The record as read, the move laid over it as the store wrote it (TransferStore.transition).
  return { kind: 'done', state: to, record: res.run ?? res.record, ended: true };
}

/** When the chain or the status route may settle the payload: after its deadline or expiry. */
function payloadSettleAt(deps: PipelineDeps, steps: SavedSteps): number | null {
  const margin = policyOf(deps).settleMarginMs;
  const deadline = (steps.permitDeadline ?? NaN) * 1000;
  if (steps.permit && Number.isFinite(deadline)) return deadline + margin;
  const expiry = steps.solanaExpiresAt ?? NaN;
  if (steps.solanaSigned && Number.isFinite(expiry)) return expiry + margin;
  return null;
}

/**
 * An abandoned permit that may have been processed is presumed used, as any other whose answer was
 * lost: no permit of its owner is signed at or below its nonce until the chain settles it.
 */
async function presumeUsed(deps: PipelineDeps, rec: TransferRecord, steps: SavedSteps): Promise<void> {
  const { permit } = steps;
  if (!permit || !isEvmChain(rec.from) || !deps.evm) return;
  await deps.evm.nonces.presumeUsed(rec.from, permit.owner, doubtOf(rec.batchId, rec.id, permit));
}
