import type { Redis } from 'ioredis';
import type { Chain } from '../domain/chains.ts';
import { UsdcBatchError } from '../domain/errors.ts';
import { inLanes } from '../domain/pool.ts';
import type { BatchSource, TransferRequest } from '../domain/transfer.ts';
import { keys } from './keys.ts';
import { queuedTransfers } from './queued-transfers.ts';

/** What ingest asks the writer to store: one batch and its accepted rows. */
export type BatchPlan = {
  readonly batchId: string;
  readonly digest: string;
  readonly source: BatchSource;
  readonly createdAt: number;
  /** Held for approval: records are written, jobs are added later by `addJobsForQueuedTransfers`. */
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

export type DroppedRow = { readonly line: number; readonly column: string | null; readonly message: string };

/**
 * One transfer's job: its queue is its source chain; its destination and amount name the job
 * (`BASE→ARB 125.00 USDC`), so bull-board says what each job pays.
 */
export type TransferJobSpec = {
  readonly transferId: string;
  readonly from: Chain;
  readonly to?: Chain | undefined;
  readonly amount?: bigint | undefined;
};

/** Adds one job per transfer; implemented by src/queue/producer.ts. */
export type TransferJobSink = {
  addTransfers(batchId: string, transfers: readonly TransferJobSpec[], round?: number): Promise<void>;
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
  /** Fault injection for tests: throw after this many transfer chunks, as a crashed producer would. */
  readonly stopAfterChunks?: number;
};

export type BatchState = {
  readonly digest: string;
  readonly enqueued: boolean;
  readonly held: boolean;
  readonly heldReason: string | null;
  readonly rows: number;
  readonly amount: bigint;
  readonly dropped: DroppedRow[];
};

export type WriteResult =
  | {
      readonly status: 'written';
      /** False when an earlier, interrupted run had created the batch and this one completed it. */
      readonly created: boolean;
      readonly rows: number;
      readonly amount: bigint;
      readonly dropped: DroppedRow[];
      /** Transfers this run added jobs for (0 when held). */
      readonly jobsAdded: number;
    }
  | { readonly status: 'exists'; readonly state: BatchState }
  | { readonly status: 'conflict'; readonly existingDigest: string }
  | { readonly status: 'refused'; readonly dropped: DroppedRow[] };

/** Thrown by the `stopAfterChunks` fault injection. */
export class SimulatedCrashError extends UsdcBatchError {
  override name = 'SimulatedCrashError';
}

/** How long a payment fingerprint counts for the likely-duplicate rule. */
export const DUPLICATE_WINDOW_MS = 24 * 60 * 60 * 1000;
const DROP_FIELD = 'drop:';
// Values passed to one MGET/MSET/ZADD inside a script: Lua's `unpack` fails past ~8,000 values.
const LUA_SLICE = 1000;

/**
 * Creates the batch record unless it exists. Counters start as if every row were queued, so the
 * worker cannot see the batch complete while ingest is still writing it.
 * KEYS: 1 batch, 2 batches. ARGV: 1 batch id, 2 created_at, then field/value pairs.
 * Returns {} when created, else {digest, enqueued}.
 */
const CREATE_BATCH = `
if redis.call('EXISTS', KEYS[1]) == 1 then
  local v = redis.call('HMGET', KEYS[1], 'digest', 'enqueued')
  return {v[1] or '', v[2] or '0'}
end
for i = 3, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('ZADD', KEYS[2], 'NX', ARGV[2], ARGV[1])
return {}
`;

/**
 * Claims the payout ids of one chunk for this batch. An id owned by another batch is reported as
 * {index, owner}. In 'check' mode nothing is claimed: the owned ids are only reported. In 'strict'
 * mode nothing of the chunk is claimed when any id is owned; in 'skip'
 * mode the free ids are claimed and each owned row is recorded once as a dropped row (`drop:<line>`),
 * taking it out of the batch's counters in the same step — so re-runs and concurrent runs agree.
 * The ids are read with MGET and claimed with MSET a slice at a time (one Redis call per slice, not
 * two per row; slices stay under Lua's unpack limit); an id this batch already owns is not rewritten.
 * KEYS: 1 batch, then one payout key per id. ARGV: 1 batch id, 2 mode, then per id: line, the
 * negated amount (a string: Lua numbers would print large amounts in exponent form), id.
 */
const CLAIM_PAYOUTS = `
local n = #KEYS - 1
local cur = {}
for s = 2, #KEYS, ${LUA_SLICE} do
  local vals = redis.call('MGET', unpack(KEYS, s, math.min(s + ${LUA_SLICE - 1}, #KEYS)))
  for j = 1, #vals do cur[s - 2 + j] = vals[j] end
end
local owned = {}
local isOwned = {}
for j = 1, n do
  local c = cur[j]
  if c and c ~= ARGV[1] then
    owned[#owned + 1] = {j, c}
    isOwned[j] = c
  end
end
if ARGV[2] == 'check' or (ARGV[2] == 'strict' and #owned > 0) then return owned end
local pairs_ = {}
for j = 1, n do
  local a = 3 + (j - 1) * 3
  if isOwned[j] then
    local msg = 'payout id "' .. ARGV[a + 2] .. '" was already enqueued in batch ' .. isOwned[j]
    if redis.call('HSETNX', KEYS[1], '${DROP_FIELD}' .. ARGV[a], 'id|' .. msg) == 1 then
      redis.call('HINCRBY', KEYS[1], 'rows', -1)
      redis.call('HINCRBY', KEYS[1], 'n_queued', -1)
      redis.call('HINCRBY', KEYS[1], 'amount', ARGV[a + 1])
    end
  elseif not cur[j] then
    pairs_[#pairs_ + 1] = KEYS[j + 1]
    pairs_[#pairs_ + 1] = ARGV[1]
    if #pairs_ >= ${2 * LUA_SLICE} then
      redis.call('MSET', unpack(pairs_))
      pairs_ = {}
    end
  end
end
if #pairs_ > 0 then redis.call('MSET', unpack(pairs_)) end
return owned
`;

/** Gives back this batch's claims (strict refusal): only keys that still name this batch. */
const RELEASE_PAYOUTS = `
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then redis.call('DEL', KEYS[i]) end
end
return 1
`;

/**
 * Writes the transfer records of one chunk, each only if absent (a re-run never resets a transfer a
 * worker has moved on), with its place in the batch's row and queued sets and its payment
 * fingerprint. Returns each transfer's current state, so jobs are added only for `queued` ones.
 * The row and queued sets get one ZADD per slice of new transfers rather than two per row: per row
 * Redis runs only the record's check and write and the fingerprint's three commands.
 * KEYS: 1 rows set, 2 queued set, then transfer key and fingerprint key per transfer.
 * ARGV: 1 batch id, 2 now, 3 fingerprint window start, 4 fingerprint ttl (ms), then 9 per transfer.
 */
const WRITE_TRANSFERS = `
local out = {}
local members = {}
local n = (#KEYS - 2) / 2
for i = 1, n do
  local tk = KEYS[1 + 2 * i]
  local fk = KEYS[2 + 2 * i]
  local a = 4 + (i - 1) * 9
  local id = ARGV[a + 1]
  local state = redis.call('HGET', tk, 'state')
  if not state then
    redis.call('HSET', tk, 'id', id, 'batch_id', ARGV[1], 'line', ARGV[a + 2], 'from', ARGV[a + 3],
      'to', ARGV[a + 4], 'amount', ARGV[a + 5], 'recipient', ARGV[a + 6], 'memo', ARGV[a + 7],
      'payout', ARGV[a + 8], 'state', 'queued', 'attempts', '0', 'updated_at', ARGV[2])
    -- Written only when set: most rows pay known recipients, and a retained record stays small.
    if ARGV[a + 9] == '1' then redis.call('HSET', tk, 'new_recipient', '1') end
    members[#members + 1] = ARGV[a + 2]
    members[#members + 1] = id
    redis.call('ZREMRANGEBYSCORE', fk, '-inf', '(' .. ARGV[3])
    redis.call('ZADD', fk, ARGV[2], ARGV[1] .. '/' .. id)
    redis.call('PEXPIRE', fk, ARGV[4])
    state = 'queued'
  end
  out[i] = state
end
for s = 1, #members, ${2 * LUA_SLICE} do
  local e = math.min(s + ${2 * LUA_SLICE - 1}, #members)
  redis.call('ZADD', KEYS[1], unpack(members, s, e))
  redis.call('ZADD', KEYS[2], unpack(members, s, e))
end
return out
`;

export type BatchWriterDeps = {
  readonly redis: Redis;
  readonly prefix: string;
  readonly jobs: TransferJobSink;
  readonly fingerprint: (t: TransferRequest) => string;
  readonly now?: () => number;
};

/**
 * Writes batches so that nothing accepted is lost and nothing is registered twice: the batch record
 * first (`enqueued=0`), then the payout-id claims, then transfer records and jobs in chunks, then
 * `enqueued=1`. A run that dies anywhere leaves `enqueued=0`; running the same input again finds the
 * record with the same digest and completes it — claims, records and job ids are all idempotent.
 */
export function createBatchWriter(deps: BatchWriterDeps) {
  const { redis } = deps;
  const k = keys(deps.prefix);
  const now = deps.now ?? Date.now;

  async function readBatchState(batchId: string): Promise<BatchState | undefined> {
    const raw = await redis.hgetall(k.batch(batchId));
    if (!raw['digest']) return undefined;
    return {
      digest: raw['digest'],
      enqueued: raw['enqueued'] === '1',
      held: raw['held'] === '1',
      heldReason: raw['held_reason'] || null,
      rows: Number(raw['rows'] ?? 0),
      amount: BigInt(raw['amount'] ?? '0'),
      dropped: droppedRows(raw),
    };
  }

  async function write(plan: BatchPlan, options: WriteOptions): Promise<WriteResult> {
    const chunkSize = options.chunkSize ?? 1000;
    const inFlight = Math.max(1, options.inFlight ?? 4);
    const droppedLines = new Set(plan.dropped.map((d) => d.line));
    const planned = withoutLines(plan.transfers, droppedLines);
    const amount = planned.reduce((sum, t) => sum + t.amount, 0n);
    const fields: string[] = [
      'id', plan.batchId,
      'created_at', String(plan.createdAt),
      'updated_at', String(plan.createdAt),
      'source', plan.source,
      'digest', plan.digest,
      'rows', String(planned.length),
      'amount', amount.toString(),
      'enqueued', '0',
      'held', plan.held ? '1' : '0',
      'held_reason', plan.held ? (plan.heldReason ?? '') : '',
      'new_recipients', String(planned.filter((t) => plan.newRecipients?.has(t.id)).length),
      'callback_url', plan.callbackUrl ?? '',
      'n_queued', String(planned.length),
      'n_in_progress', '0',
      'n_submitted', '0',
      'n_failed', '0',
      'n_rejected', '0',
      'n_needs_review', '0',
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

    const existing = (await redis.eval(
      CREATE_BATCH,
      2,
      k.batch(plan.batchId),
      k.batches,
      plan.batchId,
      String(plan.createdAt),
      ...fields,
    )) as string[];
    let created = true;
    let held = plan.held;
    if (existing.length > 0) {
      const [digest, enqueued] = existing as [string, string];
      if (digest !== plan.digest) return { status: 'conflict', existingDigest: digest };
      const state = await readBatchState(plan.batchId);
      if (!state) return { status: 'conflict', existingDigest: digest };
      if (enqueued === '1') return { status: 'exists', state };
      // An interrupted run: finish it with the decisions it recorded, not new ones.
      created = false;
      held = state.held;
    }

    let dropped = created ? [...plan.dropped] : ((await readBatchState(plan.batchId))?.dropped ?? []);
    const excluded = new Set(dropped.map((d) => d.line));
    let transfers = withoutLines(plan.transfers, excluded);

    // Claims, all of them before any transfer is written: a strict refusal then has nothing to undo
    // but the claims and the record, and no worker can have started on the batch.
    const withId = transfers.filter((t) => t.hasPayoutId);
    const strict = options.onOwnedPayout === 'strict';
    // Strict claims go one chunk at a time in payout-id order and stop at the first owned id, like
    // locks taken in one global order: of two enqueues racing over overlapping ids, the one that
    // takes the smallest shared id first cannot meet a claim of the other, so one of them always
    // wins. (Claimed in file order and in parallel, each could hold ids the other needs, and both be
    // refused.) After a refusal the remaining chunks are only checked, so every owned id is reported.
    if (strict) withId.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const claimChunks = chunksOf(withId, chunkSize);
    const owned: DroppedRow[] = [];
    const claimedKeys: string[] = [];
    let ownedInStrict = false;
    const claimChunk = async (range: Chunk, mode: 'strict' | 'skip' | 'check') => {
      const chunk = withId.slice(range.start, range.end);
      const args: string[] = [];
      for (const t of chunk) args.push(String(t.line), (-t.amount).toString(), t.id);
      const result = (await redis.eval(
        CLAIM_PAYOUTS,
        1 + chunk.length,
        k.batch(plan.batchId),
        ...chunk.map((t) => k.payout(t.id)),
        plan.batchId,
        mode,
        ...args,
      )) as [number, string][];
      for (const [index, owner] of result) {
        const t = chunk[index - 1] as TransferRequest;
        owned.push({
          line: t.line,
          column: 'id',
          message: `payout id "${t.id}" was already enqueued in batch ${owner}`,
        });
      }
      // A strict chunk with an owned id claimed nothing; any other chunk claimed all its free ids.
      if (mode === 'check') return;
      if (mode === 'strict' && result.length > 0) ownedInStrict = true;
      else claimedKeys.push(...chunk.map((t) => k.payout(t.id)));
    };
    if (strict) {
      let c = 0;
      for (; c < claimChunks.length && !ownedInStrict; c++)
        await claimChunk(claimChunks[c] as Chunk, 'strict');
      await inLanes(claimChunks.slice(c), inFlight, (range) => claimChunk(range, 'check'));
    } else {
      // Several chunks in flight: Redis then fsyncs once for all the scripts it ran in one go.
      await inLanes(claimChunks, inFlight, (range) => claimChunk(range, 'skip'));
    }
    if (ownedInStrict) {
      await undo(plan.batchId, claimedKeys);
      return { status: 'refused', dropped: owned.sort((a, b) => a.line - b.line) };
    }
    if (owned.length > 0) {
      const ownedLines = new Set(owned.map((d) => d.line));
      transfers = withoutLines(transfers, ownedLines);
      dropped = [...dropped, ...owned.filter((d) => !excluded.has(d.line))];
    }
    if (transfers.length === 0) {
      // Nothing left to pay: a batch without transfers would never complete.
      await undo(plan.batchId, claimedKeys);
      return { status: 'refused', dropped };
    }

    let jobsAdded = 0;
    // Each chunk's Redis arguments are built just before it is sent, so only the chunks in flight
    // hold them.
    const chunks = chunksOf(transfers, chunkSize);
    let started = 0;
    const writeChunk = async (range: Chunk) => {
      const chunk = transfers.slice(range.start, range.end);
      const t0 = now();
      const keyArgs: string[] = [k.batchRows(plan.batchId), k.batchState(plan.batchId, 'queued')];
      const argv: string[] = [
        plan.batchId,
        String(t0),
        String(t0 - DUPLICATE_WINDOW_MS),
        String(DUPLICATE_WINDOW_MS),
      ];
      for (const t of chunk) {
        keyArgs.push(k.transfer(plan.batchId, t.id), k.fingerprint(deps.fingerprint(t)));
        argv.push(
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
      const states = (await redis.eval(WRITE_TRANSFERS, keyArgs.length, ...keyArgs, ...argv)) as string[];
      if (held) return;
      const queued = chunk.filter((_, i) => states[i] === 'queued');
      if (queued.length === 0) return;
      await deps.jobs.addTransfers(
        plan.batchId,
        queued.map((t) => ({ transferId: t.id, from: t.from, to: t.to, amount: t.amount })),
      );
      jobsAdded += queued.length;
    };
    await inLanes(chunks, inFlight, async (chunk) => {
      if (options.stopAfterChunks !== undefined && started >= options.stopAfterChunks) {
        throw new SimulatedCrashError('USDC_TEST_SIMULATED_CRASH', 'simulated crash mid-enqueue');
      }
      started++;
      await writeChunk(chunk);
    });

    await redis.hset(k.batch(plan.batchId), 'enqueued', '1', 'updated_at', String(now()));
    const final = await readBatchState(plan.batchId);
    return {
      status: 'written',
      created,
      rows: final?.rows ?? transfers.length,
      amount: final?.amount ?? transfers.reduce((s, t) => s + t.amount, 0n),
      dropped,
      jobsAdded,
    };
  }

  /** Undoes a refused batch: nothing of it was written but the record and the claims. */
  async function undo(batchId: string, claimedKeys: string[]): Promise<void> {
    for (let i = 0; i < claimedKeys.length; i += 1000) {
      const chunk = claimedKeys.slice(i, i + 1000);
      await redis.eval(RELEASE_PAYOUTS, chunk.length, ...chunk, batchId);
    }
    await redis.multi().del(k.batch(batchId)).zrem(k.batches, batchId).exec();
  }

  return { write, readBatchState };
}
export type BatchWriter = ReturnType<typeof createBatchWriter>;

type Chunk = { readonly start: number; readonly end: number };

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

/**
 * Adds jobs for every transfer of the batch that is still `queued`: for a batch released from
 * approval (`approve`), or any batch whose jobs may be missing. Job ids are deterministic, so a
 * transfer whose job still exists is not added twice; transfers past `queued` are not touched.
 * Each transfer's job is of its own round (`round` in its record): a transfer `retry` re-queued, or
 * one a worker put back to wait for approval, has a finished job of an earlier round, and re-adding
 * that job id would be ignored while the old job is kept.
 */
export async function addJobsForQueuedTransfers(
  deps: { readonly redis: Redis; readonly prefix: string; readonly jobs: TransferJobSink },
  batchId: string,
): Promise<number> {
  let added = 0;
  const fields = ['from', 'state', 'round', 'to', 'amount'];
  for await (const page of queuedTransfers(deps.redis, deps.prefix, batchId, fields)) {
    const byRound = new Map<number, TransferJobSpec[]>();
    for (const { id, values } of page) {
      const [from, state, round, to, amount] = values;
      if (!from || state !== 'queued') continue;
      const r = Number(round ?? 0);
      const spec: TransferJobSpec = {
        transferId: id,
        from: from as Chain,
        to: (to ?? undefined) as Chain | undefined,
        amount: amount && /^[0-9]+$/.test(amount) ? BigInt(amount) : undefined,
      };
      byRound.set(r, [...(byRound.get(r) ?? []), spec]);
    }
    for (const [round, transfers] of byRound) {
      await deps.jobs.addTransfers(batchId, transfers, round);
      added += transfers.length;
    }
  }
  return added;
}
