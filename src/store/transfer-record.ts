import { isChain, type Chain } from '../domain/chains.ts';
import { isTransferRoad, type TransferRoad } from '../domain/roads.ts';
import { TRANSFER_STATES, type TransferState } from '../domain/transfer.ts';
import { cctpFactsOf, type CctpFacts } from './cctp-fields.ts';
import { parseEvidence } from './transfer-evidence.ts';
import { traceRootOf } from './transfer-trace.ts';

/** A transfer as stored in `P:t:<batchId>:<transferId>` (docs/data-model.md), parsed at the edge. */
export type TransferRecord = {
  readonly batchId: string;
  readonly id: string;
  readonly line: number;
  readonly from: Chain;
  readonly to: Chain;
  readonly amount: bigint;
  readonly recipient: string;
  readonly memo: string | null;
  readonly hasPayoutId: boolean;
  /** The road it takes (its batch's, docs/cctp.md); `service` on records written before roads existed. */
  readonly via: TransferRoad;
  /** The CCTP road's steps (cctp-fields.ts): all null on the service road. */
  readonly cctp: CctpFacts;
  /** Its address was not in the address book when the batch was enqueued. */
  readonly newRecipient: boolean;
  readonly state: TransferState;
  readonly intentId: string | null;
  readonly intentStatus: string | null;
  /** The status route did not know its intent: no longer followed (intent-status-save.lua). */
  readonly intentUntracked: boolean;
  readonly txHash: string | null;
  readonly txSignature: string | null;
  /** The EVM owner whose permit pays it (null before a permit is signed, and for SOLANA sources). */
  readonly owner: string | null;
  readonly feeTotal: bigint | null;
  readonly feePlatform: bigint | null;
  readonly feeGas: bigint | null;
  readonly netReceive: bigint | null;
  readonly attempts: number;
  readonly errorCode: string | null;
  readonly errorMessage: string | null;
  readonly waitReason: string | null;
  /** What the worker saw that decided its fate, oldest first (transfer-evidence.ts). */
  readonly evidence: readonly string[];
  /** Its trace's id (docs/traces.md), once a traced run of it started; null otherwise. */
  readonly traceId: string | null;
  readonly updatedAt: number | null;
  /**
   * The hash as stored. Code reads the saved steps through savedSteps (saved-steps.ts), which owns
   * their names; this stays for tests and tools that check what was stored.
   */
  readonly raw: Readonly<Record<string, string>>;
};

const big = (v: string | undefined): bigint | null => (v === undefined || v === '' ? null : BigInt(v));
const str = (v: string | undefined): string | null => (v === undefined || v === '' ? null : v);
/** A tx hash is stored without its `0x` (saved-steps.ts `fieldsOf`); older records have it. */
const txHashOf = (v: string | undefined): string | null =>
  v === undefined || v === '' ? null : /^[0-9a-fA-F]{64}$/.test(v) ? `0x${v}` : v;

type StoredFields = Readonly<Record<string, string | null | undefined>>;

/**
 * A value stored in two fields, `<name>` (its first 64 characters) and `<name>_rest` (saved-steps.ts
 * `fieldsOf`), read whole; older records have it whole in the first.
 */
const inTwoOf = (raw: StoredFields, name: string): string | null =>
  str(`${raw[name] ?? ''}${raw[`${name}_rest`] ?? ''}`);

/** A Solana signature (88 characters), stored in two fields. */
export const txSignatureOf = (raw: StoredFields): string | null => inTwoOf(raw, 'tx_signature');

/** An intent id, stored in two fields when longer than 64 characters (the CCTP road's). */
export const intentIdOf = (raw: StoredFields): string | null => inTwoOf(raw, 'intent_id');

/** A record's fee fields as stored, by their stored names. */
type StoredFee = {
  readonly fee_total: string | undefined;
  readonly fee_platform: string | undefined;
  readonly fee_gas: string | undefined;
  readonly net_receive: string | undefined;
};

/**
 * The transfer's fee as it stands: the estimate a send's mark saved as `est_pending`
 * (`<total>|<platform>|<gas>|<net receive>`, micro-USDC; fenced-save.lua), which the batch's totals
 * take at the transfer's next move, else the fee fields.
 */
export function feeFieldsOf(raw: Readonly<Record<string, string | undefined>>): StoredFee {
  const pending = /^([0-9]+)\|([0-9]+)\|([0-9]+)\|(-?[0-9]+)$/.exec(raw['est_pending'] ?? '');
  if (!pending) {
    const { fee_total, fee_platform, fee_gas, net_receive } = raw;
    return { fee_total, fee_platform, fee_gas, net_receive };
  }
  return { fee_total: pending[1], fee_platform: pending[2], fee_gas: pending[3], net_receive: pending[4] };
}

/** Parses a stored hash; undefined when the record is missing or was written by incompatible code. */
export function parseTransferRecord(
  batchId: string,
  raw: Record<string, string>,
): TransferRecord | undefined {
  const { id, from, to, amount, recipient, state } = raw;
  if (!id || !from || !to || !amount || !recipient || !state) return undefined;
  if (!isChain(from) || !isChain(to) || !/^[0-9]+$/.test(amount)) return undefined;
  if (!(TRANSFER_STATES as readonly string[]).includes(state)) return undefined;
  return {
    batchId,
    id,
    line: Number(raw['line'] ?? 0),
    from,
    to,
    amount: BigInt(amount),
    recipient,
    memo: str(raw['memo']),
    hasPayoutId: raw['payout'] === '1',
    via: raw['via'] !== undefined && isTransferRoad(raw['via']) ? raw['via'] : 'service',
    cctp: cctpFactsOf(raw),
    newRecipient: raw['new_recipient'] === '1',
    state: state as TransferState,
    intentId: intentIdOf(raw),
    intentStatus: str(raw['intent_status']),
    intentUntracked: raw['intent_untracked'] === '1',
    txHash: txHashOf(raw['tx_hash']),
    txSignature: txSignatureOf(raw),
    owner: str(raw['owner']) ?? permitOwner(raw['permit']),
    ...feeOf(feeFieldsOf(raw)),
    attempts: Number(raw['attempts'] ?? 0),
    errorCode: str(raw['error_code']),
    errorMessage: str(raw['error_message']),
    waitReason: str(raw['wait_reason']),
    evidence: parseEvidence(raw['evidence']),
    traceId: traceRootOf(raw['trace'])?.traceId ?? null,
    updatedAt: raw['updated_at'] ? Number(raw['updated_at']) : null,
    raw,
  };
}

function feeOf(f: StoredFee): Pick<TransferRecord, 'feeTotal' | 'feePlatform' | 'feeGas' | 'netReceive'> {
  return {
    feeTotal: big(f.fee_total),
    feePlatform: big(f.fee_platform),
    feeGas: big(f.fee_gas),
    netReceive: big(f.net_receive),
  };
}

/** The owner of a saved permit: records written before `owner` was saved with the permit have only this. */
function permitOwner(permit: string | undefined): string | null {
  if (!permit) return null;
  try {
    const owner = (JSON.parse(permit) as { owner?: unknown }).owner;
    return typeof owner === 'string' ? owner : null;
  } catch {
    return null;
  }
}
