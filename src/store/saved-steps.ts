import { z } from 'zod';
import type { PermitPayload } from '../domain/permit.ts';
import type { TransferState } from '../domain/transfer.ts';
import { parseEvidence } from './transfer-evidence.ts';
import { parseTransferRecord, type TransferRecord } from './transfer-record.ts';

/*
 * The transfer record's saved steps (docs/data-model.md, "Transfer record"): the worker's memory
 * across crashes, and what the no-double-payment rules rest on. This module owns their field
 * names: it reads them into a typed SavedSteps (the stored permit validated) and types the patches
 * written back (TransferPatch). Nothing outside src/store/ names a field of the hash.
 */

/** `sending` from the durable mark before a send until its outcome is recorded. */
export type SendState = 'sending' | 'idle';

/** A permit refused on its first send, saved so that a run after a crash goes on settling it. */
export type SavedRefusal = {
  /** The refused permit's nonce (null when the field is missing). */
  readonly nonce: bigint | null;
  /** When it was refused (ms). */
  readonly at: number;
  /** The service's reason. */
  readonly reason: string;
};

export type SavedSteps = {
  /**
   * The EVM owner as saved when it was chosen (TransferRecord.owner also falls back to the saved
   * permit's owner, for records older than this field).
   */
  readonly owner: string | null;
  /** The signed permit, once signed: validated on read. */
  readonly permit: PermitPayload | null;
  /** Copies of the permit's nonce and deadline (unix s), for quick reads. */
  readonly permitNonce: bigint | null;
  readonly permitDeadline: number | null;
  /** Signed while another transfer's permit with the nonce before it was in flight, never sent. */
  readonly prepared: boolean;
  /** When the current permit was prepared (ms). */
  readonly preparedAt: number | null;
  readonly solanaIntent: string | null;
  /** The built Solana transaction's expiry (ms); NaN when the service gave one that does not parse. */
  readonly solanaExpiresAt: number | null;
  /** The signed Solana transaction (base64). */
  readonly solanaSigned: string | null;
  /** Payloads made for this transfer (null before the first). */
  readonly payloadGen: number | null;
  /** Sends of the current payload begun (null before the first). */
  readonly sends: number | null;
  readonly sendState: SendState;
  /** A send of the current payload may have been processed. */
  readonly uncertain: boolean;
  /** Ambiguous answers and `unavailable` answers met by the current payload. */
  readonly ambiguous: number;
  readonly unavailable: number;
  /** What was observed, for needs_review (time-stamped lines). */
  readonly evidence: readonly string[];
  /** When the worker first took it (ms); null when not taken, or its clock was restarted. */
  readonly firstSeenAt: number | null;
  readonly round: number;
  /** Estimate again before anything is signed (set by `retry`). */
  readonly reestimate: boolean;
  /** Its amount is reserved under MAX_DAILY_USDC. */
  readonly spendReserved: boolean;
  readonly refusal: SavedRefusal | null;
  /** When a needs_review payload is first looked at again (ms). */
  readonly settleAt: number | null;
  readonly settled: boolean;
};

const decimal = z.string().regex(/^[0-9]+$/);
const PERMIT = z.object({
  owner: z.string().min(1),
  spender: z.string().min(1),
  value: decimal,
  nonce: decimal,
  deadline: decimal,
  signature: z.string().min(1),
  v: z.number().int(),
  r: z.string().min(1),
  s: z.string().min(1),
});

/** A saved permit that does not read back as a permit: the record was damaged, nothing may be assumed. */
export class InvalidSavedPermitError extends Error {
  constructor(batchId: string, transferId: string, why: string) {
    super(`the saved permit of transfer ${batchId}/${transferId} is not a valid permit: ${why}`);
    this.name = 'InvalidSavedPermitError';
  }
}

/** Parses a saved permit (JSON), or throws: a damaged permit is never taken for "no permit". */
export function parsePermit(json: string, where: { batchId: string; transferId: string }): PermitPayload {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (err) {
    throw new InvalidSavedPermitError(where.batchId, where.transferId, (err as Error).message);
  }
  const res = PERMIT.safeParse(value);
  if (!res.success) {
    throw new InvalidSavedPermitError(
      where.batchId,
      where.transferId,
      res.error.issues[0]?.message ?? 'invalid',
    );
  }
  return res.data;
}

const present = (v: string | undefined): v is string => v !== undefined && v !== '';
const num = (v: string | undefined): number | null => (present(v) ? Number(v) : null);

function refusalOf(raw: Readonly<Record<string, string>>): SavedRefusal | null {
  const at = raw['refused_at'];
  if (!present(at)) return null;
  const nonce = raw['refused_nonce'];
  return {
    nonce: present(nonce) && /^[0-9]+$/.test(nonce) ? BigInt(nonce) : null,
    at: Number(at),
    reason: raw['refusal'] ?? 'refused',
  };
}

/** The saved steps of a transfer record; throws InvalidSavedPermitError for a damaged permit. */
export function savedSteps(rec: TransferRecord): SavedSteps {
  const raw = rec.raw;
  const permit = raw['permit'];
  const permitNonce = raw['permit_nonce'];
  const expires = raw['solana_expires_at'];
  return {
    owner: present(raw['owner']) ? raw['owner'] : null,
    permit: present(permit) ? parsePermit(permit, { batchId: rec.batchId, transferId: rec.id }) : null,
    permitNonce: present(permitNonce) && /^[0-9]+$/.test(permitNonce) ? BigInt(permitNonce) : null,
    permitDeadline: num(raw['permit_deadline']),
    prepared: raw['prepared'] === '1',
    preparedAt: num(raw['prepared_at']),
    solanaIntent: present(raw['solana_intent']) ? raw['solana_intent'] : null,
    solanaExpiresAt: present(expires) ? Date.parse(expires) : null,
    solanaSigned: present(raw['solana_signed']) ? raw['solana_signed'] : null,
    payloadGen: raw['payload_gen'] === undefined ? null : Number(raw['payload_gen']),
    sends: raw['sends'] === undefined ? null : Number(raw['sends']),
    sendState: raw['send_state'] === 'sending' ? 'sending' : 'idle',
    uncertain: raw['uncertain'] === '1',
    ambiguous: Number(raw['ambiguous'] ?? 0),
    unavailable: Number(raw['unavailable'] ?? 0),
    evidence: parseEvidence(raw['evidence']),
    firstSeenAt: num(raw['first_seen_at']),
    round: Number(raw['round'] ?? 0),
    reestimate: raw['reestimate'] === '1',
    spendReserved: raw['spend_reserved'] === '1',
    refusal: refusalOf(raw),
    settleAt: num(raw['settle_at']),
    settled: raw['settled'] === '1',
  };
}

/** Whether the transfer holds a payload (a signed permit or Solana transaction). */
export function hasPayload(steps: SavedSteps): boolean {
  return steps.permit !== null || steps.solanaSigned !== null;
}

/** A flag as stored: `1` set, `''` cleared. */
type Flag = 1 | '';

/**
 * A write to a transfer record: the fields, each with the values it may take. Saved-step fields
 * first, then the outcome fields the pipeline and operator commands write. Written with
 * TransferStore.save (no state change) or with a transition.
 */
export type TransferPatch = {
  /** A permit is written as its JSON; `''` clears it. */
  readonly permit?: PermitPayload | '';
  readonly permit_nonce?: string;
  readonly permit_deadline?: string;
  readonly prepared?: Flag;
  readonly prepared_at?: number | '';
  readonly solana_intent?: string;
  readonly solana_tx?: string;
  readonly solana_expires_at?: string;
  readonly solana_signed?: string | '';
  readonly payload_gen?: number;
  readonly sends?: number;
  readonly send_state?: 'sending' | '';
  readonly uncertain?: 0 | 1;
  readonly ambiguous?: 0;
  readonly unavailable?: 0;
  readonly evidence?: string;
  readonly first_seen_at?: number;
  readonly round?: number;
  readonly reestimate?: Flag;
  readonly spend_reserved?: Flag;
  readonly refused_nonce?: string;
  readonly refused_at?: number | '';
  readonly refusal?: string;
  readonly settle_at?: number;
  readonly settled?: 1;
  readonly last_error?: string;
  readonly attempts?: number;
  readonly owner?: string;
  readonly intent_id?: string;
  readonly intent_status?: string;
  readonly tx_hash?: string;
  readonly tx_signature?: string;
  readonly error_code?: string;
  readonly error_message?: string;
  readonly wait_reason?: string;
  readonly resolved_by?: string;
};

/** The name of a field a patch may write or a transition may delete. */
export type TransferField = keyof TransferPatch;

/** Counters kept by HINCRBY. */
export type TransferCounter = 'ambiguous' | 'unavailable' | 'swept';

/** Clears a permit refused on its first send. */
export const NO_REFUSAL = { refused_nonce: '', refused_at: '', refusal: '' } as const satisfies TransferPatch;

/** Marks the refusal of the current permit's first send (its nonce, when, the service's reason). */
export function refusalPatch(permit: PermitPayload, at: number, reason: string): TransferPatch {
  return { refused_nonce: permit.nonce, refused_at: at, refusal: reason.slice(0, 300) };
}

/**
 * The saved fields of a new permit, the transfer's payload number `gen` (its Idempotency-Key).
 * `preparedAt` (ms) marks it prepared and unsent; otherwise any earlier mark is cleared.
 */
export function permitPatch(permit: PermitPayload, gen: number, preparedAt?: number): TransferPatch {
  return {
    owner: permit.owner,
    permit,
    permit_nonce: permit.nonce,
    permit_deadline: permit.deadline,
    payload_gen: gen,
    uncertain: 0,
    ambiguous: 0,
    unavailable: 0,
    ...NO_REFUSAL,
    prepared: preparedAt === undefined ? '' : 1,
    prepared_at: preparedAt ?? '',
  };
}

/**
 * The longest value a field may have and still fit Redis's compact hash encoding (`listpack`) under
 * its default `hash-max-listpack-value`: one longer value turns the whole record into a `hashtable`,
 * about twice its size (docs/data-model.md "Memory").
 */
export const COMPACT_VALUE_MAX = 64;

/**
 * Hash field/value pairs of a patch (a permit as its JSON). Two values are stored so that a finished
 * record stays compact (COMPACT_VALUE_MAX), and transfer-record.ts reads them back whole: a tx hash
 * without its `0x` (64 characters), and a Solana signature (88) as its first 64 characters in
 * `tx_signature` and the rest in `tx_signature_rest`.
 */
export function patchFields(patch: TransferPatch): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [f, v] of Object.entries(patch)) {
    if (v === undefined) continue;
    out[f] = typeof v === 'object' ? JSON.stringify(v) : String(v);
  }
  const tx = out['tx_hash'];
  if (tx !== undefined && /^0x[0-9a-fA-F]{64}$/.test(tx)) out['tx_hash'] = tx.slice(2);
  const sig = out['tx_signature'];
  if (sig !== undefined) {
    out['tx_signature'] = sig.slice(0, COMPACT_VALUE_MAX);
    out['tx_signature_rest'] = sig.slice(COMPACT_VALUE_MAX);
  }
  return out;
}

/**
 * What a transfer no longer needs once `submitted` (deleted in the transition that makes it so):
 * its signed payload and the marks of its sends (a Solana payload's intent id and expiry too: the
 * record's `intent_id` says the same once submitted). The intent id, tx hash or signature, fee, owner,
 * permit nonce and deadline, payload number, sends, when it was prepared (a permit signed while
 * another was in flight) and evidence stay: they are what it paid and how.
 * A finished record then holds short values only (an EVM one fits Redis's compact encoding).
 */
export const SUBMITTED_CLEARED_FIELDS: readonly TransferField[] = [
  'wait_reason',
  'permit',
  'prepared',
  'solana_intent',
  'solana_tx',
  'solana_expires_at',
  'solana_signed',
  'uncertain',
  'ambiguous',
  'unavailable',
  'send_state',
  'refusal',
  'refused_at',
  'refused_nonce',
  'last_error',
  'error_code',
  'error_message',
];

/**
 * What `retry` clears of a `failed` transfer: the saved steps of its payload (provably dead), its
 * clock and error. `owner` is not one of them: a transfer keeps its EVM owner for life (only that
 * owner signs it).
 */
export const RETRY_CLEARED_FIELDS: readonly TransferField[] = [
  'permit',
  'permit_nonce',
  'permit_deadline',
  'prepared',
  'prepared_at',
  'solana_intent',
  'solana_tx',
  'solana_expires_at',
  'solana_signed',
  'uncertain',
  'sends',
  'ambiguous',
  'unavailable',
  'send_state',
  'settle_at',
  'settled',
  'first_seen_at',
  'last_error',
  'spend_reserved',
  'error_code',
  'error_message',
];

/**
 * The record as a write left it: `patch` laid over it, `clear` deleted and (when given) its new
 * state, without reading it again.
 */
export function recordAfter(
  rec: TransferRecord,
  change: { state?: TransferState; patch?: TransferPatch; clear?: readonly TransferField[] },
): TransferRecord | undefined {
  const raw: Record<string, string> = { ...rec.raw, ...patchFields(change.patch ?? {}) };
  for (const f of change.clear ?? []) delete raw[f];
  if (change.state !== undefined) raw['state'] = change.state;
  return parseTransferRecord(rec.batchId, raw);
}
