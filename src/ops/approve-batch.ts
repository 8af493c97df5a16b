import type { Chain } from '../domain/chains.ts';
import { bookAddressOf, type BookAddress } from '../domain/recipient-key.ts';
import { addJobsForQueuedTransfers } from '../store/batch-writer.ts';
import { recordAudit } from '../store/audit.ts';
import { keys } from '../store/keys.ts';
import { queuedTransfers } from '../store/queued-transfers.ts';
import { createRecipientBook } from '../store/recipient-book.ts';
import { requireBatch, type OpsDeps } from './ops-deps.ts';

/** Releases a batch held for approval: its queued transfers get their jobs. */
export async function approveBatch(
  deps: OpsDeps,
  batchId: string,
): Promise<{ released: number; already: boolean; recipientsAdded: number }> {
  const batch = await requireBatch(deps, batchId);
  const k = keys(deps.prefix);
  const jobDeps = { redis: deps.redis, prefix: deps.prefix, jobs: deps.jobs };
  if (batch['held'] !== '1') {
    // Nothing to approve. An approve interrupted after it released the hold left transfers without
    // their jobs: they get them now (a job that exists is not added twice).
    await addJobsForQueuedTransfers(jobDeps, batchId);
    return { released: 0, already: true, recipientsAdded: 0 };
  }
  // Before the release: an approve interrupted here is run again, and the adds are idempotent.
  const recipientsAdded = await vouchForRecipients(deps, batchId);
  await deps.redis.hset(
    k.batch(batchId),
    'held',
    '0',
    'held_reason',
    '',
    'approved_at',
    String((deps.now ?? Date.now)()),
    'approved_by',
    deps.actor,
  );
  const released = await addJobsForQueuedTransfers(jobDeps, batchId);
  await recordAudit(deps.redis, deps.prefix, {
    actor: deps.actor,
    action: 'approve',
    batch: batchId,
    detail: { released, recipients_added: recipientsAdded },
  });
  return { released, already: false, recipientsAdded };
}

/**
 * Approving a batch vouches for the new recipients it releases: the addresses of its `queued` rows
 * flagged `new_recipient` are added to the address book (`via approve:<batch>`), so the next payroll
 * to them runs without a hold. Not an address removed from the book (removal is how ops answer a
 * reported fraud: only an explicit add brings it back), and not a row cancelled before the approval.
 */
async function vouchForRecipients(deps: OpsDeps, batchId: string): Promise<number> {
  const addresses: BookAddress[] = [];
  const fields = ['new_recipient', 'to', 'recipient'];
  for await (const page of queuedTransfers(deps.redis, deps.prefix, batchId, fields)) {
    for (const { values } of page) {
      const [flag, to, recipient] = values;
      if (flag === '1' && to && recipient) addresses.push(bookAddressOf({ to: to as Chain, recipient }));
    }
  }
  if (addresses.length === 0) return 0;
  const book = createRecipientBook({
    redis: deps.redis,
    prefix: deps.prefix,
    ...(deps.now ? { now: deps.now } : {}),
  });
  return await book.addUnlessRemoved(addresses, deps.actor, `approve:${batchId}`);
}
