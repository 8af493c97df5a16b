import type { TransferState } from '../domain/transfer.ts';

/** Key builders for the data model of docs/data-model.md; every key starts with the prefix. */
export function keys(prefix: string) {
  return {
    batches: `${prefix}:batches`,
    batch: (batchId: string) => `${prefix}:batch:${batchId}`,
    batchRows: (batchId: string) => `${prefix}:batch:${batchId}:rows`,
    batchState: (batchId: string, state: TransferState) => `${prefix}:batch:${batchId}:state:${state}`,
    transfer: (batchId: string, transferId: string) => `${prefix}:t:${batchId}:${transferId}`,
    payout: (payoutId: string) => `${prefix}:payout:${payoutId}`,
    fingerprint: (hash: string) => `${prefix}:fp:${hash}`,
    nonce: (chain: string, owner: string) => `${prefix}:nonce:${chain}:${owner}`,
    spend: `${prefix}:spend`,
    spendAmounts: `${prefix}:spend:amounts`,
    audit: `${prefix}:audit`,
    paused: `${prefix}:paused`,
    schedule: (name: string) => `${prefix}:schedule:${name}`,
    schedules: `${prefix}:schedules`,
  };
}
export type Keys = ReturnType<typeof keys>;
