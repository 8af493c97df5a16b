import { isEvmChain } from '../domain/chains.ts';
import { isFinalState } from '../domain/transfer.ts';
import type { PermitPayload } from '../service/types.ts';
import { withEvidence } from '../store/transfer-evidence.ts';
import { parseTransferRecord, type TransferRecord } from '../store/transfer-record.ts';
import { doubtOf } from './evm-settle-review.ts';
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
  if (jobRound !== undefined && Number(rec.raw['round'] ?? 0) !== jobRound) return undefined;
  const mayHaveMoved = rec.raw['uncertain'] === '1' || rec.raw['send_state'] === 'sending';
  const settleAt = mayHaveMoved ? payloadSettleAt(deps, rec) : null;
  const to = mayHaveMoved ? 'needs_review' : 'failed';
  const fields: Record<string, string | number> = mayHaveMoved
    ? {
        error_code: 'abandoned_uncertain',
        error_message: `${reason}; a send may have been processed: check the chain, then resolve`,
        ...(settleAt === null ? {} : { settle_at: settleAt }),
      }
    : { error_code: 'abandoned', error_message: `${reason}; nothing was paid` };
  fields['evidence'] = withEvidence(
    rec.evidence,
    (deps.now ?? Date.now)(),
    `${to}: ${fields['error_code']}: ${fields['error_message']}`,
  );
  const res = await deps.store.transition(batchId, transferId, {
    expected: ['queued', 'in_progress'],
    to,
    fields,
    clear: ['wait_reason'],
  });
  if (!res.ok) return undefined;
  const raw: Record<string, string> = { ...rec.raw, state: to };
  for (const [f, v] of Object.entries(fields)) raw[f] = String(v);
  delete raw['wait_reason'];
  deps.logger.warn(
    { batchId, transferId, state: to, code: fields['error_code'], reason: fields['error_message'] },
    `transfer ${to}: finalized an abandoned transfer`,
  );
  if (mayHaveMoved) await presumeUsed(deps, rec);
  else await deps.evm?.balances?.releaseOf(rec);
  if (res.completedGeneration !== null)
    await deps.hooks?.onBatchCompleted?.(batchId, res.completedGeneration);
  if (mayHaveMoved) await deps.hooks?.onNeedsReview?.(batchId, transferId, settleAt);
  return { kind: 'done', state: to, record: parseTransferRecord(batchId, raw), ended: true };
}

/** When the chain or the status route may settle the payload: after its deadline or expiry. */
function payloadSettleAt(deps: PipelineDeps, rec: TransferRecord): number | null {
  const margin = (deps.policy ?? DEFAULT_POLICY).settleMarginMs;
  const deadline = Number(rec.raw['permit_deadline'] ?? NaN) * 1000;
  if (rec.raw['permit'] && Number.isFinite(deadline)) return deadline + margin;
  const expiry = Date.parse(rec.raw['solana_expires_at'] ?? '');
  if (rec.raw['solana_signed'] && Number.isFinite(expiry)) return expiry + margin;
  return null;
}

/**
 * An abandoned permit that may have been processed is presumed used, as any other whose answer was
 * lost: no permit of its owner is signed at or below its nonce until the chain settles it.
 */
async function presumeUsed(deps: PipelineDeps, rec: TransferRecord): Promise<void> {
  if (!rec.raw['permit'] || !isEvmChain(rec.from) || !deps.evm) return;
  const permit = JSON.parse(rec.raw['permit']) as PermitPayload;
  await deps.evm.nonces.presumeUsed(rec.from, permit.owner, doubtOf(rec.batchId, rec.id, permit));
}
