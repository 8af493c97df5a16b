import type { Redis } from 'ioredis';
import { CCTP_FIELDS } from './cctp-fields.ts';
import { transfersInState } from './queued-transfers.ts';

/*
 * What an owner's approval to TokenMessengerV2 must cover (docs/cctp.md "The flow", step 3): the
 * amounts of the batch's transfers from the chain that are not burned yet and may be burned by this
 * owner (it was chosen for them, or none is yet), read from their records. Bounded: at most
 * ALLOWANCE_ROWS_MAX rows are counted, so one approval covers that many and the next one the rest.
 */

/** Rows one approval covers at most (one page of the batch's state sets). */
export const ALLOWANCE_ROWS_MAX = 1_000;

export type PendingBurn = { readonly id: string; readonly amount: bigint };

const FIELDS = ['from', 'amount', 'owner', CCTP_FIELDS.burnGen] as const;

/**
 * The batch's `queued` and `in_progress` transfers from `chain` with no burn begun whose owner is
 * `owner` or not chosen yet, in line order, up to ALLOWANCE_ROWS_MAX.
 */
export async function pendingBurns(
  redis: Redis,
  prefix: string,
  where: { readonly batchId: string; readonly chain: string; readonly owner: string },
): Promise<PendingBurn[]> {
  const out: PendingBurn[] = [];
  const owner = where.owner.toLowerCase();
  for (const state of ['in_progress', 'queued'] as const) {
    for await (const page of transfersInState(redis, prefix, { batchId: where.batchId, state }, FIELDS)) {
      for (const { id, values } of page) {
        const [from, amount, rowOwner, burnGen] = values;
        if (from !== where.chain || !amount || !/^[0-9]+$/.test(amount)) continue;
        if (burnGen) continue;
        if (rowOwner && rowOwner.toLowerCase() !== owner) continue;
        out.push({ id, amount: BigInt(amount) });
        if (out.length >= ALLOWANCE_ROWS_MAX) return out;
      }
    }
  }
  return out;
}
