import { isFinalState } from '../domain/transfer.ts';
import type { PipelineDeps } from './run-transfer.ts';

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
  const rec = await deps.store.load(batchId, transferId);
  if (!rec || isFinalState(rec.state)) return false;
  if (jobRound !== undefined && Number(rec.raw['round'] ?? 0) !== jobRound) return false;
  const mayHaveMoved = rec.raw['uncertain'] === '1' || rec.raw['send_state'] === 'sending';
  const res = await deps.store.transition(batchId, transferId, {
    expected: ['queued', 'in_progress'],
    to: mayHaveMoved ? 'needs_review' : 'failed',
    fields: mayHaveMoved
      ? {
          error_code: 'abandoned_uncertain',
          error_message: `${reason}; a send may have been processed: check the chain, then resolve`,
        }
      : { error_code: 'abandoned', error_message: `${reason}; nothing was paid` },
    clear: ['wait_reason'],
  });
  if (!res.ok) return false;
  deps.logger.warn(
    { batchId, transferId, state: mayHaveMoved ? 'needs_review' : 'failed' },
    'finalized an abandoned transfer',
  );
  if (res.completedGeneration !== null)
    await deps.hooks?.onBatchCompleted?.(batchId, res.completedGeneration);
  return true;
}
