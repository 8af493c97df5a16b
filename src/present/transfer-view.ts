import { finalityThresholdOf } from '../domain/cctp.ts';
import { formatUsdc } from '../domain/money.ts';
import type { TransferState } from '../domain/transfer.ts';
import type { TransferRecord } from '../store/transfer-record.ts';

/*
 * A transfer as readers see it (docs/http-api.md, the status document's `transfers`), and the job
 * result built from the same view: one presenter, so the two never spell a field differently.
 */

/** A transfer in the status document (`status --json`, `GET /v1/batches/:id`, callbacks, export). */
export type TransferView = {
  id: string;
  line: number;
  from: string;
  to: string;
  amount: string;
  recipient: string;
  memo: string | null;
  state: TransferState;
  intent_id: string | null;
  intent_status: string | null;
  tx_hash: string | null;
  tx_signature: string | null;
  /** The EVM owner whose permit pays it; null before one is chosen and for SOLANA sources. */
  owner: string | null;
  /** True when its address was not in the address book when the batch was enqueued. */
  new_recipient: boolean;
  /** The fee estimate; null before the transfer was estimated (never 0.00 for "not known"). */
  fee: { total: string; platform: string; gas: string } | null;
  /** Null while `fee` is. */
  net_receive: string | null;
  attempts: number;
  error: { code: string; message: string } | null;
  /**
   * What the worker saw that decided its fate when it was not simply accepted (a lost answer, a
   * refusal, a chain reading, a deadline passed), oldest first, `<ISO time> <what>`; empty for a
   * plain submitted.
   */
  evidence: string[];
  wait_reason: string | null;
  /** Its trace (docs/traces.md); null when no traced run of it started. */
  trace_id: string | null;
  updated_at: string | null;
  /** The CCTP road's steps (docs/cctp.md "Seeing it"); null on the service road. */
  cctp: CctpView | null;
};

/** A CCTP transfer's steps as the status document shows them. */
export type CctpView = {
  /** The burn's minFinalityThreshold: 1000 Fast, 2000 Standard. */
  finality: number;
  max_fee: string | null;
  burn_tx: string | null;
  message_nonce: string | null;
  attestation: 'pending' | 'complete' | 'expired' | null;
  mint_tx: string | null;
};

export function transferView(t: TransferRecord): TransferView {
  return {
    id: t.id,
    line: t.line,
    from: t.from,
    to: t.to,
    amount: formatUsdc(t.amount),
    recipient: t.recipient,
    memo: t.memo,
    state: t.state,
    intent_id: t.intentId,
    intent_status: t.intentStatus,
    tx_hash: t.txHash,
    tx_signature: t.txSignature,
    owner: t.owner,
    new_recipient: t.newRecipient,
    fee: feeView(t),
    net_receive: t.feeTotal === null || t.netReceive === null ? null : formatUsdc(t.netReceive),
    attempts: t.attempts,
    error: t.errorCode ? { code: t.errorCode, message: t.errorMessage ?? '' } : null,
    evidence: [...t.evidence],
    wait_reason: t.waitReason,
    trace_id: t.traceId,
    updated_at: t.updatedAt === null ? null : new Date(t.updatedAt).toISOString(),
    cctp: cctpView(t),
  };
}

function cctpView(t: TransferRecord): CctpView | null {
  if (t.via === 'service') return null;
  const c = t.cctp;
  return {
    finality: finalityThresholdOf(t.via === 'cctp-fast' ? 'fast' : 'standard'),
    max_fee: c.maxFee === null ? null : formatUsdc(c.maxFee),
    burn_tx: c.burnTx,
    message_nonce: c.nonce,
    attestation: c.attestation,
    mint_tx: c.mintTx,
  };
}

/** A transfer's fee estimate; null before it was estimated. */
function feeView(t: TransferRecord): TransferView['fee'] {
  if (t.feeTotal === null) return null;
  return {
    total: formatUsdc(t.feeTotal),
    platform: formatUsdc(t.feePlatform ?? 0n),
    gas: formatUsdc(t.feeGas ?? 0n),
  };
}

/**
 * A transfer job's result (docs/data-model.md "BullMQ jobs"): the transfer as the job left it, in the
 * status document's names and forms (built from `transferView`, never spelled twice). It is the
 * job's return value — of a completed job, and of a failed one too (job-hash.ts writes it just
 * before the job fails), so an ops tool reads one field whatever the job's fate. It is never
 * rewritten: the intent's final status reaches the job's log as one more line (intent-job-log.ts).
 */
export type JobOutcome = {
  readonly batch_id: string;
  readonly transfer_id: string;
  readonly line: number;
  readonly state: TransferState;
  readonly intent_id: string | null;
  readonly intent_status: string | null;
  readonly tx_hash: string | null;
  readonly tx_signature: string | null;
  readonly owner: string | null;
  readonly from: string;
  readonly to: string;
  readonly amount: string;
  readonly recipient: string;
  readonly fee: TransferView['fee'];
  readonly attempts: number;
  readonly error: TransferView['error'];
  readonly new_recipient: boolean;
};

export function jobOutcome(rec: TransferRecord): JobOutcome {
  const v = transferView(rec);
  return {
    batch_id: rec.batchId,
    transfer_id: v.id,
    line: v.line,
    state: v.state,
    intent_id: v.intent_id,
    intent_status: v.intent_status,
    tx_hash: v.tx_hash,
    tx_signature: v.tx_signature,
    owner: v.owner,
    from: v.from,
    to: v.to,
    amount: v.amount,
    recipient: v.recipient,
    fee: v.fee,
    attempts: v.attempts,
    error: v.error,
    new_recipient: v.new_recipient,
  };
}
