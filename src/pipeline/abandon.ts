import { isEvmChain } from '../domain/chains.ts';
import { isFinalState } from '../domain/transfer.ts';
import { withEvidence } from '../store/transfer-evidence.ts';
import { recordAfter, savedSteps, type SavedSteps, type TransferPatch } from '../store/saved-steps.ts';
import type { TransferRecord } from '../store/transfer-record.ts';
import { doubtOf } from './evm/evm-settle-review.ts';
import type { PipelineDeps, StepOutcome } from './pipeline-deps.ts';
import { DEFAULT_POLICY } from './policy.ts';

/**
 * The queue gave up on a transfer's job by itself (stalled too often, attempts exhausted): decide
 * its final state from its saved steps so that no row stays `queued` or `in_progress` (promise 2).
 * A payload that may have been processed makes it `needs_review`; otherwise nothing moved: `failed`.
 * `jobRound` guards against an old job of an earlier round finalizing a transfer that `retry`
 * re-opened. Returns true when it changed the transfer.
 */
export async function finalizeAbandoned(
  deps: PipelineDeps,
  batchId: string,
  transferId: string,
  reason: string,
  jobRound?: number,
): Promise<boolean> {
  return (await abandonTransfer(deps, batchId, transferId, reason, jobRound)) !== undefined;
}

/**
 * finalizeAbandoned, returning how it ended the transfer (the record as the transition left it),
 * or undefined when it changed nothing.
 */
export async function abandonTransfer(
  deps: PipelineDeps,
  batchId: string,
  transferId: string,
  reason: string,
  jobRound?: number,
): Promise<(StepOutcome & { kind: 'done' }) | undefined> {
  const rec = await deps.store.load(batchId, transferId);
  if (!rec || isFinalState(rec.state)) return undefined;
  const steps = savedSteps(rec);
  if (jobRound !== undefined && steps.round !== jobRound) return undefined;
  const mayHaveMoved = steps.uncertain || steps.sendState === 'sending';
  const settleAt = mayHaveMoved ? payloadSettleAt(deps, steps) : null;
  const to = mayHaveMoved ? 'needs_review' : 'failed';
  const decided: TransferPatch = mayHaveMoved
    ? {
        error_code: 'abandoned_uncertain',
        error_message: `${reason}; a send may have been processed: check the chain, then resolve`,
        ...(settleAt === null ? {} : { settle_at: settleAt }),
      }
    : { error_code: 'abandoned', error_message: `${reason}; nothing was paid` };
  const fields: TransferPatch = {
    ...decided,
    evidence: withEvidence(
      rec.evidence,
      (deps.now ?? Date.now)(),
      `${to}: ${decided.error_code}: ${decided.error_message}`,
    ),
  };
  const res = await deps.store.transition(batchId, transferId, {
    expected: ['queued', 'in_progress'],
    to,
    fields,
    clear: ['wait_reason'],
  });
  if (!res.ok) return undefined;
  deps.logger.warn(
    { batchId, transferId, state: to, code: fields['error_code'], reason: fields['error_message'] },
    `transfer ${to}: finalized an abandoned transfer`,
  );
  if (mayHaveMoved) await presumeUsed(deps, rec, steps);
  else await deps.evm?.balances?.releaseOf(rec);
  if (res.completedGeneration !== null)
    await deps.hooks?.onBatchCompleted?.(batchId, res.completedGeneration);
  if (mayHaveMoved) await deps.hooks?.onNeedsReview?.(batchId, transferId, settleAt);
  const record = recordAfter(rec, { state: to, patch: fields, clear: ['wait_reason'] });
  return { kind: 'done', state: to, record, ended: true };
}

/** When the chain or the status route may settle the payload: after its deadline or expiry. */
function payloadSettleAt(deps: PipelineDeps, steps: SavedSteps): number | null {
  const margin = (deps.policy ?? DEFAULT_POLICY).settleMarginMs;
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
