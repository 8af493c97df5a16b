import { z } from 'zod';
import type { PermitPayload } from '../domain/permit.ts';
import type { TransferState } from '../domain/transfer.ts';
import { cctpFactsOf, cctpFields, type CctpPatch } from './cctp-fields.ts';
import { parseEvidence } from './transfer-evidence.ts';
import type { TransferRecord } from './transfer-record.ts';

/*
 * The transfer record's saved steps (docs/data-model.md, "Transfer record"): the worker's memory
 * across crashes, and what the no-double-payment rules rest on. This module owns their field
 * names: it reads them into a typed SavedSteps (the stored permit validated) and maps the patches
 * written back, in the pipeline's own terms (StepsPatch), to stored fields (fieldsOf). Nothing
 * outside src/store/ names a field of the hash.
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
  /**
   * Where (the Redis primary's replication id) the current permit was last saved without a sending
   * mark: prepared, or its mark taken back. Null when unknown. The record is authoritative about
   * marks written after it only while the primary is still that one (pipeline/evm/permit-discard.ts).
   */
  readonly unsentSite: string | null;
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

/**
 * The saved steps of a transfer record; throws InvalidSavedPermitError for a damaged permit.
 * `known` is the permit already parsed from this very field (a run's own write), not validated again.
 */
export function savedSteps(rec: TransferRecord, known?: PermitPayload | null): SavedSteps {
  const raw = rec.raw;
  const permit = raw['permit'];
  const permitNonce = raw['permit_nonce'];
  const expires = raw['solana_expires_at'];
  return {
    owner: present(raw['owner']) ? raw['owner'] : null,
    permit:
      known !== undefined
        ? known
        : present(permit)
          ? parsePermit(permit, { batchId: rec.batchId, transferId: rec.id })
          : null,
    permitNonce: present(permitNonce) && /^[0-9]+$/.test(permitNonce) ? BigInt(permitNonce) : null,
    permitDeadline: num(raw['permit_deadline']),
    prepared: raw['prepared'] === '1',
    preparedAt: num(raw['prepared_at']),
    unsentSite: present(raw['unsent_site']) ? raw['unsent_site'] : null,
    solanaIntent: present(raw['solana_intent']) ? raw['solana_intent'] : null,
    solanaExpiresAt: present(expires) ? Date.parse(expires) : null,
    solanaSigned: present(raw['solana_signed']) ? raw['solana_signed'] : null,
    payloadGen: num(raw['payload_gen']),
    sends: num(raw['sends']),
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

/**
 * The payload number (its `Idempotency-Key`, `<batch>/<transfer>/<gen>`) a new payload of the
 * transfer takes: the current payload's own when no send of it ever began (prepared and discarded,
 * or its mark taken back), so that the keys a transfer's sent payloads use are 1, 2, 3… with no gap.
 * After a loss of this project's memory (a Redis emptied or restored), the first payload sent again
 * then meets its predecessor's key at the service, which answers `idempotency_key_reused`
 * (pipeline/outcomes.ts keyReusedReview) instead of paying a second time under a key it never saw.
 */
export function nextPayloadGen(steps: SavedSteps): number {
  const gen = steps.payloadGen ?? 0;
  const neverSent = gen > 0 && (steps.sends ?? 0) === 0 && !steps.uncertain && steps.sendState !== 'sending';
  return neverSent ? gen : gen + 1;
}

/** Whether the transfer holds a payload (a signed permit or Solana transaction, or a CCTP burn begun). */
export function hasPayload(steps: SavedSteps, rec?: Pick<TransferRecord, 'cctp'>): boolean {
  return steps.permit !== null || steps.solanaSigned !== null || (rec?.cctp.burnGen ?? null) !== null;
}

/**
 * A write to a transfer record, in the pipeline's and operators' own terms: saved steps first, then
 * the outcome fields. `null`, `false` and a zero counter clear a field (every write deletes it, so
 * a read finds it missing). Only this module knows how
 * each is stored (`fieldsOf`). Written with TransferStore.save, saveFenced (no state change) or with
 * a transition.
 */
export type StepsPatch = {
  /** A new permit (its nonce and deadline copied for quick reads); `null` clears it. */
  readonly permit?: PermitPayload | null;
  readonly prepared?: boolean;
  readonly preparedAt?: number | null;
  /** SavedSteps.unsentSite; `null` clears it. */
  readonly unsentSite?: string | null;
  readonly solanaIntent?: string | null;
  /** As the service gave it (ISO). */
  readonly solanaExpiresAt?: string | null;
  readonly solanaSigned?: string | null;
  readonly payloadGen?: number;
  readonly sends?: number | null;
  readonly sendState?: SendState;
  readonly uncertain?: boolean;
  /** Ambiguous and `unavailable` answers of the current payload (counted by `incr`; reset with 0). */
  readonly ambiguous?: number;
  readonly unavailable?: number;
  readonly firstSeenAt?: number | null;
  readonly round?: number;
  readonly reestimate?: boolean;
  readonly spendReserved?: boolean;
  readonly refusal?: { readonly nonce: bigint; readonly at: number; readonly reason: string } | null;
  readonly settleAt?: number | null;
  readonly settled?: boolean;
  readonly lastError?: string | null;
  readonly attempts?: number;
  readonly owner?: string;
  readonly intentId?: string | null;
  readonly intentStatus?: string | null;
  readonly txHash?: string | null;
  readonly txSignature?: string | null;
  readonly error?: { readonly code: string; readonly message: string } | null;
  readonly waitReason?: string | null;
  readonly resolvedBy?: string;
  /** The CCTP road's steps (cctp-fields.ts). */
  readonly cctp?: CctpPatch;
  /**
   * The whole evidence list, in a transition that makes a transfer final (the decision its last
   * line): a run that holds the lock carries the list whole. Other lines go by appendEvidence.
   */
  readonly evidence?: readonly string[];
};

/** Counters kept by HINCRBY. */
export type TransferCounter = 'ambiguous' | 'unavailable' | 'swept';

/** Clears a permit refused on its first send. */
export const NO_REFUSAL = { refusal: null } as const satisfies StepsPatch;

/** Marks the refusal of the current permit's first send (its nonce, when, the service's reason). */
export function refusalPatch(permit: PermitPayload, at: number, reason: string): StepsPatch {
  return { refusal: { nonce: BigInt(permit.nonce), at, reason: reason.slice(0, 300) } };
}

/**
 * The saved fields of a new permit, the transfer's payload number `gen` (its Idempotency-Key).
 * `prepared` marks it prepared and unsent: when (ms), and where it is saved (SavedSteps.unsentSite,
 * null when unknown); otherwise any earlier mark is cleared (it is saved with its first send's mark).
 */
export function permitPatch(
  permit: PermitPayload,
  gen: number,
  prepared?: { readonly at: number; readonly site: string | null },
): StepsPatch {
  return {
    owner: permit.owner,
    permit,
    payloadGen: gen,
    uncertain: false,
    ambiguous: 0,
    unavailable: 0,
    ...NO_REFUSAL,
    prepared: prepared !== undefined,
    preparedAt: prepared?.at ?? null,
    unsentSite: prepared?.site ?? null,
  };
}

/**
 * The longest value a field may have and still fit Redis's compact hash encoding (`listpack`) under
 * its default `hash-max-listpack-value`: one longer value turns the whole record into a `hashtable`,
 * about twice its size (docs/data-model.md "Memory").
 */
export const COMPACT_VALUE_MAX = 64;

const flag = (v: boolean) => (v ? '1' : '');
/** A value that may outgrow COMPACT_VALUE_MAX as two fields, its first 64 characters and the rest (`''` clears both). */
const inTwo = (name: string, v: string | null): Record<string, string> => ({
  [name]: v === null ? '' : v.slice(0, COMPACT_VALUE_MAX),
  [`${name}_rest`]: v === null ? '' : v.slice(COMPACT_VALUE_MAX),
});
const orEmpty = (v: string | number | null) => (v === null ? '' : String(v));

/** How each field of a patch is stored: field/value pairs of the hash (`''` clears). */
const STORED: {
  readonly [K in keyof StepsPatch]-?: (v: NonNullable<StepsPatch[K]> | null) => Record<string, string>;
} = {
  // A cleared permit takes where it was saved unsent along (a new one says its own: permitPatch).
  permit: (p) =>
    p === null
      ? { permit: '', unsent_site: '' }
      : { permit: JSON.stringify(p), permit_nonce: p.nonce, permit_deadline: p.deadline },
  prepared: (v) => ({ prepared: flag(v === true) }),
  preparedAt: (v) => ({ prepared_at: orEmpty(v) }),
  unsentSite: (v) => ({ unsent_site: orEmpty(v) }),
  // `solana_tx` (the built transaction, no longer saved) goes with the intent it was built for.
  solanaIntent: (v) => (v === null ? { solana_intent: '', solana_tx: '' } : { solana_intent: v }),
  solanaExpiresAt: (v) => ({ solana_expires_at: orEmpty(v) }),
  solanaSigned: (v) => ({ solana_signed: orEmpty(v) }),
  payloadGen: (v) => ({ payload_gen: orEmpty(v) }),
  sends: (v) => ({ sends: orEmpty(v) }),
  sendState: (v) => ({ send_state: v === 'sending' ? 'sending' : '' }),
  uncertain: (v) => ({ uncertain: flag(v === true) }),
  ambiguous: (v) => ({ ambiguous: v ? String(v) : '' }),
  unavailable: (v) => ({ unavailable: v ? String(v) : '' }),
  firstSeenAt: (v) => ({ first_seen_at: orEmpty(v) }),
  round: (v) => ({ round: orEmpty(v) }),
  reestimate: (v) => ({ reestimate: flag(v === true) }),
  spendReserved: (v) => ({ spend_reserved: flag(v === true) }),
  refusal: (r) =>
    r === null
      ? { refused_nonce: '', refused_at: '', refusal: '' }
      : { refused_nonce: r.nonce.toString(), refused_at: String(r.at), refusal: r.reason },
  settleAt: (v) => ({ settle_at: orEmpty(v) }),
  settled: (v) => ({ settled: flag(v === true) }),
  lastError: (v) => ({ last_error: orEmpty(v) }),
  attempts: (v) => ({ attempts: orEmpty(v) }),
  owner: (v) => ({ owner: orEmpty(v) }),
  intentId: (v) => inTwo('intent_id', v),
  intentStatus: (v) => ({ intent_status: orEmpty(v) }),
  txHash: (v) => ({ tx_hash: orEmpty(v === null ? null : v.replace(/^0x(?=[0-9a-fA-F]{64}$)/, '')) }),
  txSignature: (v) => inTwo('tx_signature', v),
  error: (e) =>
    e === null ? { error_code: '', error_message: '' } : { error_code: e.code, error_message: e.message },
  waitReason: (v) => ({ wait_reason: orEmpty(v) }),
  resolvedBy: (v) => ({ resolved_by: orEmpty(v) }),
  cctp: (v) => (v === null ? {} : cctpFields(v)),
  evidence: (v) => ({ evidence: v === null ? '' : JSON.stringify(v) }),
};

/**
 * Hash field/value pairs of a patch: the stored names and encodings (`''` for a cleared field, which
 * a transition deletes). Two values are stored so that a finished record stays compact
 * (COMPACT_VALUE_MAX), and transfer-record.ts reads them back whole: a tx hash without its `0x` (64
 * characters), a Solana signature (88) as its first 64 characters in `tx_signature` and the rest in
 * `tx_signature_rest`, and an intent id longer than 64 (the CCTP road's `cctp:<domain>:<burn tx>`,
 * 73) likewise in `intent_id` and `intent_id_rest`.
 */
export function fieldsOf(patch: StepsPatch): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(patch) as [keyof StepsPatch, unknown][]) {
    if (value === undefined) continue;
    const store = STORED[key] as (v: unknown) => Record<string, string>;
    Object.assign(out, store(value));
  }
  return out;
}

/** One write of a patch: the field/value pairs it sets and the fields it deletes. */
export type StoredWrite = { readonly sets: readonly string[]; readonly gone: readonly string[] };

/**
 * A patch as one write (fieldsOf). With `carried`, the record as the run that writes it carries it
 * (RunRecord: no other writer touches it while the run holds its lock, pipeline/context.ts), a
 * cleared field the record does not hold is left out: deleting a field that is not there is a
 * Redis command for nothing (most saves clear `uncertain`, `ambiguous` and the like, which are
 * rarely set).
 */
export function storedWrite(
  patch: StepsPatch,
  carried?: TransferRecord,
  fields: Record<string, string> = fieldsOf(patch),
): StoredWrite {
  const sets: string[] = [];
  const gone: string[] = [];
  for (const [f, v] of Object.entries(fields)) {
    if (v !== '') sets.push(f, v);
    else if (!carried || carried.raw[f] !== undefined) gone.push(f);
  }
  return { sets, gone };
}

/**
 * What a transfer no longer needs once `submitted` (cleared in the transition that makes it so):
 * its signed payload and the marks of its sends (a Solana payload's intent id and expiry too: the
 * record's `intent_id` says the same once submitted). The intent id, tx hash or signature, fee, owner,
 * permit nonce and deadline, payload number, sends, when it was prepared (a permit signed while
 * another was in flight) and evidence stay: they are what it paid and how.
 * A finished record then holds short values only (an EVM one fits Redis's compact encoding).
 */
export const SUBMITTED_CLEARED = {
  waitReason: null,
  permit: null,
  prepared: false,
  solanaIntent: null,
  solanaExpiresAt: null,
  solanaSigned: null,
  uncertain: false,
  ambiguous: 0,
  unavailable: 0,
  sendState: 'idle',
  refusal: null,
  lastError: null,
  error: null,
} as const satisfies StepsPatch;

/**
 * What `retry` clears of a `failed` transfer: the saved steps of its payload (provably dead), its
 * clock and error. `owner` is not one of them: a transfer keeps its EVM owner for life (only that
 * owner signs it).
 */
export const RETRY_CLEARED = {
  permit: null,
  prepared: false,
  preparedAt: null,
  solanaIntent: null,
  solanaExpiresAt: null,
  solanaSigned: null,
  uncertain: false,
  sends: null,
  ambiguous: 0,
  unavailable: 0,
  sendState: 'idle',
  settleAt: null,
  settled: false,
  firstSeenAt: null,
  lastError: null,
  spendReserved: false,
  error: null,
} as const satisfies StepsPatch;

/**
 * A transfer as a run carries it: the record and its saved steps, parsed once (when the run took it,
 * TransferStore.take), with the run's writes laid over both (`runRecordAfter`), never read again.
 */
export type RunRecord = TransferRecord & { readonly steps: SavedSteps };

/** A record with its saved steps parsed; throws InvalidSavedPermitError for a damaged permit. */
export function runRecordOf(rec: TransferRecord): RunRecord {
  return { ...rec, steps: savedSteps(rec) };
}

/** A run's write as its record and saved steps read it: what `applied` changes of each. */
type Mutable<T> = { -readonly [K in keyof T]?: T[K] };
type Applied = { readonly steps?: Mutable<SavedSteps>; readonly rec?: Mutable<TransferRecord> };

const orNull = (v: string | null): string | null => (v === null || v === '' ? null : v);
/** As transfer-record.ts reads a tx hash stored without its `0x` (STORED.txHash). */
const txHashRead = (v: string): string | null => {
  const stored = v.replace(/^0x(?=[0-9a-fA-F]{64}$)/, '');
  return stored === '' ? null : /^[0-9a-fA-F]{64}$/.test(stored) ? `0x${stored}` : stored;
};

/**
 * What each field of a patch changes in the typed record and saved steps: the same values that
 * storing it (STORED) and parsing it back (parseTransferRecord, savedSteps) give, without doing
 * either (test/unit/saved-steps-apply.test.ts holds the two paths equal).
 */
const APPLIED: {
  readonly [K in keyof StepsPatch]-?: (v: NonNullable<StepsPatch[K]> | null) => Applied;
} = {
  permit: (p) =>
    p === null
      ? { steps: { permit: null, unsentSite: null } }
      : {
          steps: {
            permit: p,
            permitNonce: /^[0-9]+$/.test(p.nonce) ? BigInt(p.nonce) : null,
            permitDeadline: p.deadline === '' ? null : Number(p.deadline),
          },
        },
  prepared: (v) => ({ steps: { prepared: v === true } }),
  preparedAt: (v) => ({ steps: { preparedAt: v } }),
  unsentSite: (v) => ({ steps: { unsentSite: orNull(v) } }),
  solanaIntent: (v) => ({ steps: { solanaIntent: orNull(v) } }),
  solanaExpiresAt: (v) => ({ steps: { solanaExpiresAt: v === null || v === '' ? null : Date.parse(v) } }),
  solanaSigned: (v) => ({ steps: { solanaSigned: orNull(v) } }),
  payloadGen: (v) => ({ steps: { payloadGen: v } }),
  sends: (v) => ({ steps: { sends: v } }),
  sendState: (v) => ({ steps: { sendState: v === 'sending' ? 'sending' : 'idle' } }),
  uncertain: (v) => ({ steps: { uncertain: v === true } }),
  ambiguous: (v) => ({ steps: { ambiguous: v || 0 } }),
  unavailable: (v) => ({ steps: { unavailable: v || 0 } }),
  firstSeenAt: (v) => ({ steps: { firstSeenAt: v } }),
  round: (v) => ({ steps: { round: v ?? 0 } }),
  reestimate: (v) => ({ steps: { reestimate: v === true } }),
  spendReserved: (v) => ({ steps: { spendReserved: v === true } }),
  refusal: (r) => ({
    steps: {
      refusal:
        r === null ? null : { nonce: r.nonce, at: r.at, reason: r.reason === '' ? 'refused' : r.reason },
    },
  }),
  settleAt: (v) => ({ steps: { settleAt: v } }),
  settled: (v) => ({ steps: { settled: v === true } }),
  lastError: () => ({}),
  attempts: (v) => ({ rec: { attempts: v ?? 0 } }),
  owner: (v) => ({ steps: { owner: orNull(v) } }),
  intentId: (v) => ({ rec: { intentId: orNull(v) } }),
  intentStatus: (v) => ({ rec: { intentStatus: orNull(v) } }),
  txHash: (v) => ({ rec: { txHash: v === null ? null : txHashRead(v) } }),
  txSignature: (v) => ({ rec: { txSignature: orNull(v) } }),
  error: (e) => ({
    rec:
      e === null
        ? { errorCode: null, errorMessage: null }
        : { errorCode: orNull(e.code), errorMessage: orNull(e.message) },
  }),
  waitReason: (v) => ({ rec: { waitReason: orNull(v) } }),
  resolvedBy: () => ({}),
  // Read back from the stored view by runRecordAfter (its fields merge with those held).
  cctp: () => ({}),
  evidence: (v) => ({
    rec: { evidence: v === null ? [] : [...v] },
    steps: { evidence: v === null ? [] : [...v] },
  }),
};

/**
 * The record as a write left it: `patch` laid over it and (when given) its new state, without
 * reading or parsing it again — each field's typed value follows from the patch (APPLIED); the
 * stored view (`raw`, which tells a later write which fields exist) takes `fields`, the pairs the
 * write itself stored (fieldsOf the patch when not given).
 */
export function runRecordAfter(
  rec: RunRecord,
  change: {
    readonly state?: TransferState;
    readonly patch?: StepsPatch;
    readonly evidence?: readonly string[];
  },
  fields: Record<string, string> = fieldsOf(change.patch ?? {}),
): RunRecord {
  const raw: Record<string, string> = { ...rec.raw };
  for (const [f, v] of Object.entries(fields)) {
    if (v === '') delete raw[f];
    else raw[f] = v;
  }
  const steps: Mutable<SavedSteps> = { ...rec.steps };
  const next: Mutable<TransferRecord> = {};
  for (const [key, value] of Object.entries(change.patch ?? {}) as [keyof StepsPatch, unknown][]) {
    if (value === undefined) continue;
    const applied = (APPLIED[key] as (v: unknown) => Applied)(value);
    Object.assign(steps, applied.steps);
    Object.assign(next, applied.rec);
  }
  if (change.evidence) {
    raw['evidence'] = JSON.stringify(change.evidence);
    steps.evidence = [...change.evidence];
    next.evidence = [...change.evidence];
  }
  if (change.state !== undefined) {
    raw['state'] = change.state;
    next.state = change.state;
  }
  if (change.patch?.cctp) next.cctp = cctpFactsOf(raw);
  const done = steps as SavedSteps;
  return { ...rec, ...next, owner: done.owner ?? done.permit?.owner ?? null, raw, steps: done };
}
