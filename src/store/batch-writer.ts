import type { Redis } from 'ioredis';
import { inLanes } from '../domain/pool.ts';
import { isTransferRoad, type TransferRoad } from '../domain/roads.ts';
import type { BatchSource, TransferRequest } from '../domain/transfer.ts';
export type { DroppedRow } from './batch-record.ts';
import { DROP_FIELD, parseBatch, readBatch, type Batch, type DroppedRow } from './batch-record.ts';
import { keys } from './keys.ts';
import { luaScriptFile, runScript } from './lua-script.ts';
import { LuaReplyError, replyArray, replyInt, replyString, replyStrings } from './lua-reply.ts';
import { hashReply } from './hash-reply.ts';

/** What ingest asks the writer to store: one batch and its accepted rows. */
export type BatchPlan = {
  readonly batchId: string;
  readonly digest: string;
  /**
   * The road every transfer takes (docs/cctp.md), stored as `via` on the batch and on each
   * transfer record; `service` when absent.
   */
  readonly via?: TransferRoad | undefined;
  readonly source: BatchSource;
  /** Who enqueued it (docs/access.md "Four eyes"): never one of its approvers. */
  readonly submittedBy: string;
  /** APPROVALS_REQUIRED when it was enqueued: the approvals a hold of it needs (at least). */
  readonly approvalsRequired: number;
  /**
   * The digest of the enqueuing process's controls (src/config/control-settings.ts): a worker whose
   * controls have this digest does not judge the batch again (src/worker/batch-controls.ts).
   */
  readonly controls?: string | undefined;
  readonly createdAt: number;
  /** Held for approval: records are written, jobs are added on approval (src/ingest/queued-jobs.ts). */
  readonly held: boolean;
  /** Why it is held (the batch's `held_reason`). */
  readonly heldReason?: string | undefined;
  /** Transfer ids whose recipient was not in the address book (their records' `new_recipient`). */
  readonly newRecipients?: ReadonlySet<string> | undefined;
  readonly callbackUrl: string | null;
  readonly transfers: readonly TransferRequest[];
  /** Rows refused before writing (likely duplicates under --skip-invalid), remembered in the record. */
  readonly dropped: readonly DroppedRow[];
};

export type WriteOptions = {
  /**
   * What to do with a payout id that another batch owns: `strict` refuses the whole batch (and
   * undoes this batch's claims), `skip` drops those rows and keeps the rest.
   */
  readonly onOwnedPayout: 'strict' | 'skip';
  readonly chunkSize?: number;
  /** Chunks written concurrently: enough to keep Redis busy without holding many in memory. */
  readonly inFlight?: number;
};

/** The batch record as ingest reads it back (batch-record.ts). */
export type BatchState = Batch;

export type WriteResult =
  | {
      readonly status: 'written';
      /** False when an earlier, interrupted run had created the batch and this one completed it. */
      readonly created: boolean;
      readonly rows: number;
      readonly amount: bigint;
      readonly dropped: DroppedRow[];
      /** The record as closed (read in the same step); null if it vanished meanwhile. */
      readonly state: Batch | null;
    }
  | { readonly status: 'exists'; readonly state: BatchState }
  | {
      readonly status: 'conflict';
      readonly existingDigest: string;
      /** Set when the rows are the same but the batch is on another road. */
      readonly existingVia?: TransferRoad | undefined;
    }
  | { readonly status: 'refused'; readonly dropped: DroppedRow[] };

/** How long a payment fingerprint counts for the likely-duplicate rule. */
export const DUPLICATE_WINDOW_MS = 24 * 60 * 60 * 1000;
/** The span of one fingerprint set (`keys.fingerprintDay`): a UTC day, so a window spans two. */
export const FINGERPRINT_DAY_MS = 24 * 60 * 60 * 1000;

/** The fingerprint set that holds the rows enqueued at `ms`. */
export function fingerprintDayOf(ms: number): number {
  return Math.floor(ms / FINGERPRINT_DAY_MS);
}

const CREATE_BATCH = luaScriptFile('batch-create.lua');
const CLAIM_PAYOUTS = luaScriptFile('payout-claim.lua');
const RELEASE_PAYOUTS = luaScriptFile('payout-release.lua');
const WRITE_TRANSFERS = luaScriptFile('transfers-write.lua');

export type BatchWriterDeps = {
  readonly redis: Redis;
  readonly prefix: string;
  readonly fingerprint: (t: TransferRequest) => string;
  readonly now?: () => number;
};

/** The batch record as ingest reads it back; `undefined` when there is none. */
export async function readBatchState(
  redis: Redis,
  prefix: string,
  batchId: string,
): Promise<BatchState | undefined> {
  const batch = await readBatch(redis, prefix, batchId);
  return batch && batch.digest !== '' ? batch : undefined;
}

/*
 * A batch is written so that nothing accepted is lost and nothing is registered twice: the batch
 * record first (`enqueued=0`, openBatch), then the payout-id claims, then transfer records in chunks
 * (writeTransferChunks), then `enqueued=1` (closeBatch). A run that dies anywhere leaves
 * `enqueued=0`; running the same input again finds the record with the same digest and completes it
 * — claims and records are idempotent. Ingest gives each chunk's rows their jobs between the chunks
 * (src/ingest/job-hand-off.ts).
 */

/** A batch whose record and claims are in: its transfers are to be written, then the batch closed. */
export type OpenBatch = {
  readonly status: 'open';
  /** False when an earlier, interrupted run had created the batch and this one completes it. */
  readonly created: boolean;
  /** Held for approval (an interrupted run's hold when it completes one): no jobs until approved. */
  readonly held: boolean;
  /** The transfers to write: the plan's, less the rows dropped and those whose payout id another batch owns. */
  readonly transfers: readonly TransferRequest[];
  readonly dropped: DroppedRow[];
};

/**
 * The first steps of a write: the batch record (or the earlier run's, to complete it with the
 * decisions it recorded), and the payout-id claims. Anything but `open` ends the write.
 */
export async function openBatch(
  deps: BatchWriterDeps,
  plan: BatchPlan,
  options: WriteOptions,
): Promise<OpenBatch | Exclude<WriteResult, { status: 'written' }>> {
  const { redis, prefix } = deps;
  const creation = await createBatchRecord(deps, plan);
  let created = true;
  let held = plan.held;
  let dropped: DroppedRow[] = [...plan.dropped];
  if (!creation.created) {
    if (creation.digest !== plan.digest) return { status: 'conflict', existingDigest: creation.digest };
    if (creation.via !== (plan.via ?? 'service'))
      return { status: 'conflict', existingDigest: creation.digest, existingVia: creation.via };
    const state = await readBatchState(redis, prefix, plan.batchId);
    if (!state) return { status: 'conflict', existingDigest: creation.digest };
    if (creation.enqueued) return { status: 'exists', state };
    // An interrupted run: finish it with the decisions it recorded, not new ones.
    created = false;
    held = state.held;
    dropped = [...state.dropped];
  }
  const excluded = new Set(dropped.map((d) => d.line));
  let transfers = withoutLines(plan.transfers, excluded);

  const claims = await claimPayouts(deps, plan.batchId, transfers, options);
  if (claims.refused) {
    await undoBatch(deps, plan.batchId, claims.claimedKeys);
    return { status: 'refused', dropped: claims.owned.sort((a, b) => a.line - b.line) };
  }
  if (claims.owned.length > 0) {
    const ownedLines = new Set(claims.owned.map((d) => d.line));
    transfers = withoutLines(transfers, ownedLines);
    dropped = [...dropped, ...claims.owned.filter((d) => !excluded.has(d.line))];
  }
  if (transfers.length === 0) {
    // Nothing left to pay: a batch without transfers would never complete.
    await undoBatch(deps, plan.batchId, claims.claimedKeys);
    return { status: 'refused', dropped };
  }
  return { status: 'open', created, held, transfers, dropped };
}

/** The last step of a write: every transfer is in (and handed on): `enqueued=1`, and what was written. */
export async function closeBatch(
  deps: BatchWriterDeps,
  batchId: string,
  open: OpenBatch,
): Promise<Extract<WriteResult, { status: 'written' }>> {
  const now = deps.now ?? Date.now;
  const key = keys(deps.prefix).batch(batchId);
  const res = await deps.redis
    .multi()
    .hset(key, 'enqueued', '1', 'updated_at', String(now()))
    .hgetall(key)
    .exec();
  const [err, raw] = res?.[1] ?? [null, {}];
  if (err) throw err;
  const final = parseBatch(hashReply(`batch ${batchId}`, raw));
  return {
    status: 'written',
    created: open.created,
    rows: final?.rows ?? open.transfers.length,
    amount: final?.amount ?? open.transfers.reduce((s, t) => s + t.amount, 0n),
    dropped: open.dropped,
    state: final,
  };
}

/** What creating the record found: nothing (it is created), or an earlier run's record. */
type Creation =
  | { readonly created: true }
  | {
      readonly created: false;
      readonly digest: string;
      readonly enqueued: boolean;
      readonly via: TransferRoad;
    };

/** Creates the batch record unless it exists (batch-create.lua). */
export async function createBatchRecord(deps: BatchWriterDeps, plan: BatchPlan): Promise<Creation> {
  const k = keys(deps.prefix);
  const existing = replyArray(
    'batch-create.lua',
    await runScript(
      deps.redis,
      CREATE_BATCH,
      [k.batch(plan.batchId), k.batches],
      [plan.batchId, String(plan.createdAt), ...batchRecordFields(plan)],
    ),
  );
  if (existing.length === 0) return { created: true };
  const digest = replyString('batch-create.lua', existing[0]);
  // A record written before roads existed has no `via`: it took the service.
  const via = replyString('batch-create.lua', existing[2], { orEmpty: true });
  return {
    created: false,
    digest,
    enqueued: replyString('batch-create.lua', existing[1], { orEmpty: true }) === '1',
    via: isTransferRoad(via) ? via : 'service',
  };
}

/** The new batch record's fields: counters as if every row were queued, the dropped rows. */
function batchRecordFields(plan: BatchPlan): string[] {
  const planned = withoutLines(plan.transfers, new Set(plan.dropped.map((d) => d.line)));
  const amount = planned.reduce((sum, t) => sum + t.amount, 0n);
  const fields: string[] = [
    'id', plan.batchId,
    'created_at', String(plan.createdAt),
    'updated_at', String(plan.createdAt),
    'source', plan.source,
    'submitted_by', plan.submittedBy,
    'approvals_required', String(plan.approvalsRequired),
    'controls', plan.controls ?? '',
    'digest', plan.digest,
    'via', plan.via ?? 'service',
    'rows', String(planned.length),
    'amount', amount.toString(),
    'enqueued', '0',
    'held', plan.held ? '1' : '0',
    'held_reason', plan.held ? (plan.heldReason ?? '') : '',
    'new_recipients', String(planned.filter((t) => plan.newRecipients?.has(t.id)).length),
    'callback_url', plan.callbackUrl ?? '',
    'n_queued', String(planned.length),
    // Transfers that may still be sent and have no fee estimate yet: every row, at first.
    'unestimated', String(planned.length),
    'n_in_progress', '0',
    'n_submitted', '0',
    'n_failed', '0',
    'n_rejected', '0',
    'n_needs_review', '0',
    'n_cancelled', '0',
    'fee', '0',
    'net_receive', '0',
    'paid_amount', '0',
    'paid_fee', '0',
    'paid_net_receive', '0',
    'intents_complete', '0',
    'intents_failed', '0',
    'intents_untracked', '0',
    'complete', '0',
    'generation', '0',
  ]; // prettier-ignore
  for (const d of plan.dropped) fields.push(`${DROP_FIELD}${d.line}`, `${d.column ?? ''}|${d.message}`);
  return fields;
}

/** What the claims did: the rows whose id another batch owns, the keys claimed, a strict refusal. */
export type ClaimResult = {
  readonly owned: DroppedRow[];
  readonly claimedKeys: string[];
  /** Strict mode met an owned id: the batch is refused (its claims are to be given back). */
  readonly refused: boolean;
};

/**
 * Claims the payout ids of the transfers that carry one, all of them before any transfer is
 * written: a strict refusal then has nothing to undo but the claims and the record, and no worker
 * can have started on the batch.
 */
export async function claimPayouts(
  deps: BatchWriterDeps,
  batchId: string,
  transfers: readonly TransferRequest[],
  options: WriteOptions,
): Promise<ClaimResult> {
  const chunkSize = options.chunkSize ?? 1000;
  const inFlight = Math.max(1, options.inFlight ?? 4);
  const withId = transfers.filter((t) => t.hasPayoutId);
  const strict = options.onOwnedPayout === 'strict';
  // Strict claims go one chunk at a time in payout-id order and stop at the first owned id, like
  // locks taken in one global order: of two enqueues racing over overlapping ids, the one that
  // takes the smallest shared id first cannot meet a claim of the other, so one of them always
  // wins. (Claimed in file order and in parallel, each could hold ids the other needs, and both be
  // refused.) After a refusal the remaining chunks are only checked, so every owned id is reported.
  if (strict) withId.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const chunks = chunksOf(withId, chunkSize);
  const result: ClaimResult = { owned: [], claimedKeys: [], refused: false };
  const collect = (r: ClaimResult): void => {
    result.owned.push(...r.owned);
    result.claimedKeys.push(...r.claimedKeys);
  };
  if (strict) {
    let c = 0;
    for (; c < chunks.length; c++) {
      const r = await claimChunk(deps, batchId, sliceOf(withId, chunks[c] as Chunk), 'strict');
      collect(r);
      if (r.refused) break;
    }
    const refused = c < chunks.length;
    await inLanes(chunks.slice(c + 1), inFlight, async (range) =>
      collect(await claimChunk(deps, batchId, sliceOf(withId, range), 'check')),
    );
    return { ...result, refused };
  }
  // Several chunks in flight: Redis then fsyncs once for all the scripts it ran in one go.
  await inLanes(chunks, inFlight, async (range) =>
    collect(await claimChunk(deps, batchId, sliceOf(withId, range), 'skip')),
  );
  return result;
}

/**
 * One chunk's claims (payout-claim.lua). A strict chunk with an owned id claims nothing and refuses
 * the batch; any other chunk claims all its free ids; a `check` only reports the owned ones.
 */
async function claimChunk(
  deps: BatchWriterDeps,
  batchId: string,
  chunk: readonly TransferRequest[],
  mode: 'strict' | 'skip' | 'check',
): Promise<ClaimResult> {
  const k = keys(deps.prefix);
  const args: string[] = [batchId, mode];
  for (const t of chunk) args.push(String(t.line), (-t.amount).toString(), t.id);
  const payoutKeys = chunk.map((t) => k.payout(t.id));
  const found = replyArray(
    'payout-claim.lua',
    await runScript(deps.redis, CLAIM_PAYOUTS, [k.batch(batchId), ...payoutKeys], args),
  );
  const owned = found.map((pair): DroppedRow => {
    const [index, owner] = replyArray('payout-claim.lua', pair);
    const t = chunk[replyInt('payout-claim.lua', index) - 1];
    if (!t)
      throw new LuaReplyError(
        'USDC_LUA_REPLY',
        `payout-claim.lua: index ${String(index)} is not in the chunk`,
      );
    return {
      line: t.line,
      column: 'id',
      message: `payout id "${t.id}" was already enqueued in batch ${replyString('payout-claim.lua', owner)}`,
    };
  });
  const refused = mode === 'strict' && owned.length > 0;
  return { owned, claimedKeys: mode === 'check' || refused ? [] : payoutKeys, refused };
}

/**
 * Writes the transfer records in chunks, `inFlight` of them at a time, and yields each chunk's rows
 * left `queued`, in order, as its write is done (the next chunks are being written meanwhile). Each
 * chunk's Redis arguments are built just before it is sent, so only the chunks in flight hold them.
 * When it ends early (an error, or its reader stops), it waits for the writes in flight first.
 */
export async function* writeTransferChunks(
  deps: BatchWriterDeps,
  plan: BatchPlan,
  transfers: readonly TransferRequest[],
  options: WriteOptions,
): AsyncGenerator<TransferRequest[]> {
  const chunks = chunksOf(transfers, options.chunkSize ?? 1000);
  const inFlight = Math.max(1, options.inFlight ?? 4);
  const pending: Promise<TransferRequest[]>[] = [];
  let next = 0;
  try {
    while (next < chunks.length || pending.length > 0) {
      while (pending.length < inFlight && next < chunks.length) {
        const write = writeTransferChunk(deps, plan, sliceOf(transfers, chunks[next++] as Chunk));
        // Awaited below, in order; a failure meanwhile is not an unhandled rejection.
        write.catch(() => {});
        pending.push(write);
      }
      yield await (pending.shift() as Promise<TransferRequest[]>);
    }
  } finally {
    await Promise.allSettled(pending);
  }
}

/** One chunk's records (transfers-write.lua); returns the transfers of the chunk still `queued`. */
async function writeTransferChunk(
  deps: BatchWriterDeps,
  plan: BatchPlan,
  chunk: readonly TransferRequest[],
): Promise<TransferRequest[]> {
  const k = keys(deps.prefix);
  const t0 = (deps.now ?? Date.now)();
  const day = fingerprintDayOf(t0);
  const keyArgs: string[] = [
    k.batchRows(plan.batchId),
    k.batchState(plan.batchId, 'queued'),
    k.fingerprintDay(day),
  ];
  // The day's set is read while its rows are in the window: until the end of the next day.
  const argv: string[] = [
    plan.batchId,
    String(t0),
    String((day + 1) * FINGERPRINT_DAY_MS + DUPLICATE_WINDOW_MS),
    plan.via ?? 'service',
  ];
  for (const t of chunk) {
    keyArgs.push(k.transfer(plan.batchId, t.id));
    argv.push(
      deps.fingerprint(t),
      t.id,
      String(t.line),
      t.from,
      t.to,
      t.amount.toString(),
      t.recipient,
      t.memo ?? '',
      t.hasPayoutId ? '1' : '0',
      plan.newRecipients?.has(t.id) ? '1' : '0',
    );
  }
  const states = replyStrings(
    'transfers-write.lua',
    await runScript(deps.redis, WRITE_TRANSFERS, keyArgs, argv),
  );
  return chunk.filter((_, i) => states[i] === 'queued');
}

/** Undoes a refused batch: nothing of it was written but the record and the claims. */
async function undoBatch(
  deps: BatchWriterDeps,
  batchId: string,
  claimedKeys: readonly string[],
): Promise<void> {
  const k = keys(deps.prefix);
  for (let i = 0; i < claimedKeys.length; i += 1000) {
    await runScript(deps.redis, RELEASE_PAYOUTS, claimedKeys.slice(i, i + 1000), [batchId]);
  }
  await deps.redis.multi().del(k.batch(batchId)).zrem(k.batches, batchId).exec();
}

type Chunk = { readonly start: number; readonly end: number };

function sliceOf<T>(items: readonly T[], range: Chunk): T[] {
  return items.slice(range.start, range.end);
}

function chunksOf(items: readonly unknown[], size: number): Chunk[] {
  const out: Chunk[] = [];
  for (let start = 0; start < items.length; start += size) {
    out.push({ start, end: Math.min(items.length, start + size) });
  }
  return out;
}

/** The transfers not on the given lines; the same array when there are none to leave out. */
function withoutLines(
  transfers: readonly TransferRequest[],
  lines: ReadonlySet<number>,
): readonly TransferRequest[] {
  return lines.size === 0 ? transfers : transfers.filter((t) => !lines.has(t.line));
}
