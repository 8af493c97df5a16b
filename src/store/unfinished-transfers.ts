import type { Redis } from 'ioredis';
import { isChain, type Chain } from '../domain/chains.ts';
import type { TransferState } from '../domain/transfer.ts';
import { keys } from './keys.ts';
import { transfersInState } from './queued-transfers.ts';

/** A transfer that is not final yet, with what the sweeper needs to find and re-add its job. */
export type UnfinishedTransfer = {
  readonly batchId: string;
  readonly id: string;
  readonly state: TransferState;
  readonly from: Chain;
  readonly to: Chain | undefined;
  readonly amount: bigint | undefined;
  readonly round: number;
  readonly updatedAt: number;
};

const FIELDS = ['from', 'to', 'amount', 'round', 'updated_at', 'state'];
const BATCH_PAGE = 500;

/**
 * The `queued` and `in_progress` transfers of every open batch whose jobs should exist: enqueued
 * (`enqueued=1`: a batch still being written gets its jobs from ingest), not held (a held batch's
 * rows have no job on purpose until `approve`), not complete. Only transfers untouched for
 * `quietMs` are yielded: a transfer a command has just re-queued gets its job a moment later.
 * `readBatch` may pass over an open batch, given its `updated_at` (which every transition touches).
 * Reads batch records in pages (one pipeline each) and each open batch's state sets by line.
 */
export async function* unfinishedTransfers(
  redis: Redis,
  prefix: string,
  options: {
    readonly now: number;
    readonly quietMs: number;
    readonly readBatch?: (batchId: string, updatedAt: number) => boolean;
  },
): AsyncGenerator<UnfinishedTransfer[]> {
  const k = keys(prefix);
  for (let start = 0; ; start += BATCH_PAGE) {
    const ids = await redis.zrange(k.batches, start, start + BATCH_PAGE - 1);
    if (ids.length === 0) return;
    const pipe = redis.pipeline();
    for (const id of ids) pipe.hmget(k.batch(id), 'enqueued', 'held', 'complete', 'updated_at');
    const flags = (await pipe.exec()) ?? [];
    const open = ids.filter((id, i) => {
      const [enqueued, held, complete, updatedAt] = (flags[i]?.[1] ?? []) as (string | null)[];
      if (enqueued !== '1' || held === '1' || complete === '1') return false;
      return options.readBatch?.(id, Number(updatedAt ?? 0)) ?? true;
    });
    for (const batchId of open) {
      for (const state of ['queued', 'in_progress'] as const) {
        for await (const page of transfersInState(redis, prefix, { batchId, state }, FIELDS)) {
          const quiet = page.flatMap(({ id, values }) => {
            const t = unfinished(batchId, id, values);
            return t && options.now - t.updatedAt >= options.quietMs ? [t] : [];
          });
          if (quiet.length > 0) yield quiet;
        }
      }
    }
    if (ids.length < BATCH_PAGE) return;
  }
}

function unfinished(
  batchId: string,
  id: string,
  values: readonly (string | null)[],
): UnfinishedTransfer | undefined {
  const [from, to, amount, round, updatedAt, state] = values;
  if (!from || !isChain(from) || (state !== 'queued' && state !== 'in_progress')) return undefined;
  return {
    batchId,
    id,
    state,
    from,
    to: to && isChain(to) ? to : undefined,
    amount: amount && /^[0-9]+$/.test(amount) ? BigInt(amount) : undefined,
    round: Number(round ?? 0),
    updatedAt: Number(updatedAt ?? 0),
  };
}
