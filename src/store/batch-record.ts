import type { Redis } from 'ioredis';
import { isTransferRoad, type TransferRoad } from '../domain/roads.ts';
import { TRANSFER_STATES, type BatchSource, type TransferState } from '../domain/transfer.ts';
import { keys } from './keys.ts';
import { hashReply } from './hash-reply.ts';

/*
 * The batch record `P:batch:<id>` (docs/data-model.md "Batch record"), parsed once, here: nothing
 * outside src/store reads one of its fields by name.
 */

/** A row dropped under `--skip-invalid`, kept on the batch so that a re-run reports the same. */
export type DroppedRow = { readonly line: number; readonly column: string | null; readonly message: string };

export type Batch = {
  readonly id: string;
  /** ms; null on a record that has none. */
  readonly createdAt: number | null;
  readonly source: BatchSource;
  /** The road its transfers take (docs/cctp.md); `service` on batches written before it was recorded. */
  readonly via: TransferRoad;
  /** Who enqueued it (docs/access.md "Four eyes"); null on batches written before it was recorded. */
  readonly submittedBy: string | null;
  /** sha256 of the normalised rows: the same id with another digest is a conflict. */
  readonly digest: string;
  /** The digest of the controls it was enqueued (or last retried) under; null before it was recorded. */
  readonly controls: string | null;
  /** The worker controls that judged it when they were not `controls`, and their refusal (JSON or ''). */
  readonly controlsChecked: string | null;
  readonly controlsRefusal: string | null;
  readonly rows: number;
  /** micro-USDC, every accepted row. */
  readonly amount: bigint;
  /** False while ingest is still writing its transfers and jobs. */
  readonly enqueued: boolean;
  readonly held: boolean;
  /** Why it is held; null when it is not (or an approval emptied it). */
  readonly heldReason: string | null;
  readonly approvalsRequired: number;
  /** ms of the approval that released its last hold; null when none did. */
  readonly approvedAt: number | null;
  /** The names that released its last hold. */
  readonly approvedBy: readonly string[];
  /** How many times its set of queued transfers changed (approvals.ts checks it). */
  readonly queuedRev: string;
  /** The held batch's approval digest cached at `approvalDigestRev`. */
  readonly approvalDigest: { readonly digest: string; readonly rev: string } | null;
  readonly callbackUrl: string | null;
  readonly dropped: readonly DroppedRow[];
  readonly counts: Readonly<Record<TransferState, number>>;
  /** Sums over transfers whose estimate is recorded (micro-USDC). */
  readonly fee: bigint;
  readonly netReceive: bigint;
  /** Transfers that may still be sent and have no estimate; null on a record written before it existed. */
  readonly unestimated: number | null;
  /** The same sums over submitted transfers only. */
  readonly paid: { readonly amount: bigint; readonly fee: bigint; readonly netReceive: bigint };
  /** Submitted transfers whose intent is complete, failed, or cannot be followed. */
  readonly intents: { readonly complete: number; readonly failed: number; readonly untracked: number };
  readonly complete: boolean;
  /** How many times it completed (each completion is detected once). */
  readonly generation: number;
};

const SOURCES: readonly BatchSource[] = ['csv', 'http', 'schedule', 'rebalance'];
// The field prefix of a dropped row (written by batch-create.lua and payout-claim.lua).
export const DROP_FIELD = 'drop:';

const count = (v: string | undefined): number => {
  const n = Number(v ?? 0);
  return Number.isFinite(n) && n > 0 ? Math.floor(n) : 0;
};
const micro = (v: string | undefined): bigint => (v !== undefined && /^-?[0-9]+$/.test(v) ? BigInt(v) : 0n);
const text = (v: string | undefined): string | null => (v === undefined || v === '' ? null : v);
const ms = (v: string | undefined): number | null => (v && Number(v) > 0 ? Number(v) : null);

/** A stored road; a record written before roads existed went through the service. */
export const roadOf = (v: string | undefined): TransferRoad =>
  v !== undefined && isTransferRoad(v) ? v : 'service';

/** The batch record parsed; null when there is none (no `id`). */
export function parseBatch(raw: Record<string, string>): Batch | null {
  const id = raw['id'];
  if (!id) return null;
  const source = SOURCES.find((s) => s === raw['source']) ?? 'csv';
  return {
    id,
    createdAt: ms(raw['created_at']),
    source,
    via: roadOf(raw['via']),
    submittedBy: text(raw['submitted_by']),
    digest: raw['digest'] ?? '',
    controls: text(raw['controls']),
    controlsChecked: text(raw['controls_checked']),
    controlsRefusal: text(raw['controls_refusal']),
    rows: count(raw['rows']),
    amount: micro(raw['amount']),
    enqueued: raw['enqueued'] === '1',
    held: raw['held'] === '1',
    heldReason: text(raw['held_reason']),
    approvalsRequired: Math.max(1, count(raw['approvals_required'])),
    approvedAt: ms(raw['approved_at']),
    approvedBy: (raw['approved_by'] ?? '').split(',').filter((n) => n !== ''),
    queuedRev: raw['queued_rev'] ?? '',
    approvalDigest: raw['approval_digest']
      ? { digest: raw['approval_digest'], rev: raw['approval_digest_rev'] ?? '' }
      : null,
    callbackUrl: text(raw['callback_url']),
    dropped: droppedRows(raw),
    counts: stateCounts(raw),
    fee: micro(raw['fee']),
    netReceive: micro(raw['net_receive']),
    unestimated:
      raw['unestimated'] !== undefined && /^[0-9]+$/.test(raw['unestimated'])
        ? Number(raw['unestimated'])
        : null,
    paid: {
      amount: micro(raw['paid_amount']),
      fee: micro(raw['paid_fee']),
      netReceive: micro(raw['paid_net_receive']),
    },
    intents: {
      complete: count(raw['intents_complete']),
      failed: count(raw['intents_failed']),
      untracked: count(raw['intents_untracked']),
    },
    complete: raw['complete'] === '1',
    generation: count(raw['generation']),
  };
}

function stateCounts(raw: Record<string, string>): Record<TransferState, number> {
  const counts = {} as Record<TransferState, number>;
  for (const s of TRANSFER_STATES) counts[s] = count(raw[`n_${s}`]);
  return counts;
}

function droppedRows(raw: Record<string, string>): DroppedRow[] {
  const out: DroppedRow[] = [];
  for (const [field, value] of Object.entries(raw)) {
    if (!field.startsWith(DROP_FIELD)) continue;
    const bar = value.indexOf('|');
    const column = value.slice(0, bar);
    out.push({
      line: Number(field.slice(DROP_FIELD.length)),
      column: column === '' ? null : column,
      message: value.slice(bar + 1),
    });
  }
  return out.sort((a, b) => a.line - b.line);
}

/** One batch record; null when there is no such batch. */
export async function readBatch(redis: Redis, prefix: string, batchId: string): Promise<Batch | null> {
  return parseBatch(await redis.hgetall(keys(prefix).batch(batchId)));
}

/** Batch records in one round trip, in the order asked; null where there is no such batch. */
export async function readBatches(
  redis: Redis,
  prefix: string,
  ids: readonly string[],
): Promise<(Batch | null)[]> {
  if (ids.length === 0) return [];
  const k = keys(prefix);
  const pipe = redis.pipeline();
  for (const id of ids) pipe.hgetall(k.batch(id));
  const res = (await pipe.exec()) ?? [];
  return ids.map((_, i) => {
    const [err, raw] = res[i] ?? [null, {}];
    if (err) throw err;
    return parseBatch(hashReply(`batch ${ids[i] ?? ''}`, raw));
  });
}

/** The batch's `callback_url` alone (one HGET: read at each completion); null when it has none. */
export async function readCallbackUrl(redis: Redis, prefix: string, batchId: string): Promise<string | null> {
  return (await redis.hget(keys(prefix).batch(batchId), 'callback_url')) || null;
}

/**
 * Submitted transfers whose intent is not final yet (pending, detected, minted, or not asked yet):
 * `n_submitted` less the intents complete, failed and untracked (docs/data-model.md: the counters
 * are moved by the same Lua scripts that change a transfer's state or intent status, so a read of a
 * 100,000-row batch is one HGETALL, never a scan).
 */
export function openIntents(b: Pick<Batch, 'counts' | 'intents'>): number {
  return Math.max(0, b.counts.submitted - b.intents.complete - b.intents.failed - b.intents.untracked);
}
