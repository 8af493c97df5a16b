import type { TransferState } from '../domain/transfer.ts';

/** Key builders for the data model of docs/data-model.md; every key starts with the prefix. */
export function keys(prefix: string) {
  return {
    batches: `${prefix}:batches`,
    batch: (batchId: string) => `${prefix}:batch:${batchId}`,
    batchRows: (batchId: string) => `${prefix}:batch:${batchId}:rows`,
    batchState: (batchId: string, state: TransferState) => `${prefix}:batch:${batchId}:state:${state}`,
    transfer: (batchId: string, transferId: string) => `${prefix}:t:${batchId}:${transferId}`,
    /** The approvals of a batch's current hold: name → `<at ms>|<digest>` (approvals.ts). */
    batchApprovals: (batchId: string) => `${prefix}:batch:${batchId}:approvals`,
    payout: (payoutId: string) => `${prefix}:payout:${payoutId}`,
    /**
     * The payment fingerprints of the rows enqueued on one UTC day (`day` = ms since the epoch ÷ 24 h):
     * field = fingerprint, value = its transfers, `<enqueued ms>:<batchId>/<transferId>` space-separated.
     */
    fingerprintDay: (day: number) => `${prefix}:fpd:${day}`,
    /** One fingerprint's transfers as a ZSET (written before the day sets; read until it expires). */
    fingerprint: (hash: string) => `${prefix}:fp:${hash}`,
    nonce: (chain: string, owner: string) => `${prefix}:nonce:${chain}:${owner}`,
    /** A treasury owner's account nonces on a chain: `next`, and `c:<call id>` → nonce (owner-txs.ts). */
    ownerAccount: (chain: string, owner: string) => `${prefix}:otx:${chain}:${owner.toLowerCase()}`,
    /** The owner's own transactions on the chain, `<nonce>:<field>` (owner-txs.ts). */
    ownerTxs: (chain: string, owner: string) => `${prefix}:otx:${chain}:${owner.toLowerCase()}:txs`,
    spend: `${prefix}:spend`,
    spendAmounts: `${prefix}:spend:amounts`,
    audit: `${prefix}:audit`,
    /** The lock of one AUDIT_LOG_FILE, `…:<file id>` (audit-file.ts). */
    auditFileLock: `${prefix}:audit-file-lock`,
    paused: `${prefix}:paused`,
    schedule: (name: string) => `${prefix}:schedule:${name}`,
    /** Firings of a schedule that were held when they fired (pruned as they are approved). */
    scheduleHeld: (name: string) => `${prefix}:schedule:${name}:held`,
    schedules: `${prefix}:schedules`,
    recipients: `${prefix}:recipients`,
    recipientsRemoved: `${prefix}:recipients:removed`,
    /** What a recipient not yet known is paid in all (`NEW_RECIPIENT_MAX_USDC`, new-recipient-exposure.ts). */
    recipientExposure: (recipientKey: string) => `${prefix}:recipient-exposure:${recipientKey}`,
    /** Submitted intents the workers follow on the status route, scored by their next poll (ms). */
    follow: `${prefix}:follow`,
    /** The controls each process runs with: process → `{ role, digest, settings, at }` (published-controls.ts). */
    controls: `${prefix}:controls`,
    /** The sanctions lists the workers screen with, JSON (screening-state.ts; docs/screening.md). */
    screening: `${prefix}:screening`,
    unapproved: `${prefix}:unapproved`,
    unapprovedAmounts: `${prefix}:unapproved:amounts`,
    /** The most replicas each primary (by replication id) has reported connected (replica-acks.ts). */
    replicas: `${prefix}:replicas`,
    /** A counter each replica-acknowledgement round writes, for its WAIT to cover (replica-acks.ts). */
    acks: `${prefix}:acks`,
  };
}
export type Keys = ReturnType<typeof keys>;
