import type { Redis } from 'ioredis';
import type { Chain } from '../domain/chains.ts';
import { queuedTransfers } from '../store/queued-transfers.ts';
import type { TransferJobSink, TransferJobSpec } from '../domain/transfer-jobs.ts';

/**
 * Adds jobs for every transfer of the batch that is still `queued`: for a batch released from
 * approval (`approve`), or any batch whose jobs may be missing (an approve interrupted after the
 * release). Job ids are deterministic, so a transfer whose job still exists is not added twice;
 * transfers past `queued` are not touched. Each transfer's job is of its own round (`round` in its
 * record): a transfer `retry` re-queued, or one a worker put back to wait for approval, has a
 * finished job of an earlier round, and re-adding that job id would be ignored while the old job is
 * kept.
 */
export async function addJobsForQueuedTransfers(
  deps: { readonly redis: Redis; readonly prefix: string; readonly jobs: TransferJobSink },
  batchId: string,
): Promise<number> {
  let added = 0;
  const fields = ['from', 'state', 'round', 'to', 'amount'];
  for await (const page of queuedTransfers(deps.redis, deps.prefix, batchId, fields)) {
    for (const [round, transfers] of byRound(page)) {
      await deps.jobs.addTransfers(batchId, transfers, round);
      added += transfers.length;
    }
  }
  return added;
}

/** A page's transfers still `queued`, as job specs grouped by their round. */
function byRound(
  page: readonly { readonly id: string; readonly values: readonly (string | null)[] }[],
): Map<number, TransferJobSpec[]> {
  const rounds = new Map<number, TransferJobSpec[]>();
  for (const { id, values } of page) {
    const [from, state, round, to, amount] = values;
    if (!from || state !== 'queued') continue;
    const r = Number(round ?? 0);
    const spec: TransferJobSpec = {
      transferId: id,
      from: from as Chain,
      to: (to ?? undefined) as Chain | undefined,
      amount: amount && /^[0-9]+$/.test(amount) ? BigInt(amount) : undefined,
    };
    rounds.set(r, [...(rounds.get(r) ?? []), spec]);
  }
  return rounds;
}
