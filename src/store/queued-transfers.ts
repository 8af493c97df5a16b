import type { Redis } from 'ioredis';
import type { TransferState } from '../domain/transfer.ts';
import { keys } from './keys.ts';

/** Transfers per page (one ZRANGEBYSCORE and one pipeline of HMGETs). */
const PAGE_SIZE = 1000;

type QueuedTransfer = { readonly id: string; readonly values: readonly (string | null)[] };

/**
 * The batch's `queued` transfers, a page at a time in line order, each with the record fields asked
 * for (one pipeline per page). Paged by line (the score) rather than by index: the set shrinks while
 * workers take transfers.
 */
export function queuedTransfers(
  redis: Redis,
  prefix: string,
  batchId: string,
  fields: readonly string[],
): AsyncGenerator<QueuedTransfer[]> {
  return transfersInState(redis, prefix, { batchId, state: 'queued' }, fields);
}

/** The batch's transfers in `state`, a page at a time in line order (see queuedTransfers). */
export async function* transfersInState(
  redis: Redis,
  prefix: string,
  where: { readonly batchId: string; readonly state: TransferState },
  fields: readonly string[],
): AsyncGenerator<QueuedTransfer[]> {
  const { batchId, state } = where;
  const k = keys(prefix);
  let after = '-inf';
  for (;;) {
    const page = await redis.zrangebyscore(
      k.batchState(batchId, state),
      after,
      '+inf',
      'WITHSCORES',
      'LIMIT',
      0,
      PAGE_SIZE,
    );
    if (page.length === 0) return;
    const pipe = redis.pipeline();
    const ids: string[] = [];
    for (let i = 0; i < page.length; i += 2) {
      ids.push(page[i] as string);
      pipe.hmget(k.transfer(batchId, page[i] as string), ...fields);
    }
    const rows = (await pipe.exec()) ?? [];
    yield rows.map(([err, values], i) => {
      if (err) throw err;
      return { id: ids[i] as string, values: values as (string | null)[] };
    });
    if (page.length < PAGE_SIZE * 2) return;
    after = `(${page[page.length - 1] as string}`;
  }
}
