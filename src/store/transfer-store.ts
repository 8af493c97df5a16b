import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { FINAL_STATES, TRANSFER_STATES, type TransferState } from '../domain/transfer.ts';
import { FOLLOWED_FIELDS, parseFollowedTransfer, type FollowedTransfer } from './intent-follows.ts';
import { keys, type Keys } from './keys.ts';
import { LuaReplyError, replyArray, replyInt, replyOptionalStrings, replyString } from './lua-reply.ts';
import { luaScriptFile, runScript } from './lua-script.ts';
import { releaseTokenLock, takeTokenLock } from './token-lock.ts';
import type { ScriptCall, WriteSite } from './replica-acks.ts';
import {
  fieldsOf,
  runRecordOf,
  storedWrite,
  type RunRecord,
  type StepsPatch,
  type TransferCounter,
} from './saved-steps.ts';
import {
  afterEstimate,
  afterEvidence,
  afterMove,
  afterSave,
  pendingEstimateOf,
  type StoredEstimate,
} from './run-record-writes.ts';
import { clipEvidenceLine, EVIDENCE_LINES } from './transfer-evidence.ts';
import { parseTransferRecord, type TransferRecord } from './transfer-record.ts';
import { readTraceFacts, saveTraceRoot, type TraceRoot } from './transfer-trace.ts';

/**
 * The scripts of a transfer's record (scripts/, each headed by its KEYS, ARGV and output). A state
 * change moves the transfer and, in the same step, the batch's counters, state sets, settlement
 * tally (batch-record.ts) and completion flag, so a status read of a 100,000-row batch reads
 * counters, never scans; a call re-sent after a lost reply returns its first answer
 * (scripts/includes/move-transfer.lua says how).
 */
const TRANSITION = luaScriptFile('transfer-move.lua');
const TAKE = luaScriptFile('transfer-take.lua');
const SAVE_ESTIMATE = luaScriptFile('estimate-save.lua');
const SAVE_INTENT_STATUS = luaScriptFile('intent-status-save.lua');
const RELOCK = luaScriptFile('lock-extend.lua');
const FENCED_SAVE = luaScriptFile('fenced-save.lua');
const APPEND_EVIDENCE = luaScriptFile('evidence-append.lua');

/**
 * What a save made under the run's lock found (TransferStore.saveFenced): the run no longer holds
 * the lock (nothing written), or it wrote, and where (when asked: the write a send rests on), and
 * the record the fence carried with the write laid over it (run-record-writes.ts).
 */
export type FencedSave =
  | { readonly held: false }
  | { readonly held: true; readonly site: WriteSite | undefined; readonly record?: RunRecord };

/** A fenced save as a script call, and the record its fence carried as the call leaves it. */
export type FencedSaveCall = ScriptCall & { readonly record: RunRecord | undefined };

export type TransitionResult =
  | {
      readonly ok: true;
      readonly previous: TransferState;
      readonly completedGeneration: number | null;
      /** The record as the transition left it, read in the same step. */
      readonly record: TransferRecord | undefined;
      /** The record the change carried (TransitionChange.carried), the move laid over it. */
      readonly run: RunRecord | undefined;
    }
  | { readonly ok: false; readonly current: TransferState | null }
  /** Fenced (TransitionChange.fence) by a token the transfer's processing lock does not hold. */
  | { readonly ok: false; readonly current: null; readonly lockLost: true };

/**
 * What a run found when it took its transfer (TransferStore.take): whether it holds the lock, and
 * then the record as the take left it (`in_progress` when it moved a queued one), and whether
 * processing is paused.
 */
export type TakenTransfer =
  | { readonly locked: false }
  | { readonly locked: true; readonly record: RunRecord | undefined; readonly paused: boolean };

export type TransferStore = ReturnType<typeof createTransferStore>;

/** Which transfer a function of this file reads or writes. */
type TransferAt = { readonly batchId: string; readonly transferId: string };

/** A store's state: its Redis, its keys and clock. */
type Store = {
  readonly redis: Redis;
  readonly prefix: string;
  readonly k: Keys;
  readonly now: () => number;
};

/** The transfer records of one prefix (docs/data-model.md); wires the top-level functions below. */
export function createTransferStore(deps: { redis: Redis; prefix: string; now?: () => number }) {
  const s: Store = {
    redis: deps.redis,
    prefix: deps.prefix,
    k: keys(deps.prefix),
    now: deps.now ?? Date.now,
  };
  return {
    keys: s.k,
    load: (batchId: string, transferId: string) => loadTransfer(s, { batchId, transferId }),
    /** The record with its saved steps parsed (RunRecord), for a step outside a run (abandon.ts). */
    loadRun: async (batchId: string, transferId: string) => {
      const rec = await loadTransfer(s, { batchId, transferId });
      return rec && runRecordOf(rec);
    },
    save: (batchId: string, transferId: string, patch: StepsPatch, carried?: RunRecord) =>
      saveSteps(s, { batchId, transferId }, patch, carried),
    saveFenced: (batchId: string, transferId: string, patch: StepsPatch, fence: SaveFence) =>
      saveFenced(s, { batchId, transferId }, patch, fence),
    appendEvidence: (batchId: string, transferId: string, line: string, at: number, carried?: RunRecord) =>
      appendEvidence(s, { batchId, transferId }, line, at, carried),
    fencedSaveCall: (batchId: string, transferId: string, patch: StepsPatch, fence: SaveFence) =>
      fencedSaveCall(s, { batchId, transferId }, patch, fence),
    lock: (batchId: string, transferId: string, token: string, ttlMs: number) =>
      lockTransfer(s, { batchId, transferId }, token, ttlMs),
    take: (batchId: string, transferId: string, lock: { token: string; ttlMs: number }, move: boolean) =>
      takeTransfer(s, { batchId, transferId }, lock, move),
    relock: (batchId: string, transferId: string, token: string, ttlMs: number) =>
      relockTransfer(s, { batchId, transferId }, token, ttlMs),
    unlock: (batchId: string, transferId: string, token: string) =>
      unlockTransfer(s, { batchId, transferId }, token),
    incr: (batchId: string, transferId: string, field: TransferCounter, by = 1) =>
      incrCounter(s, { batchId, transferId }, field, by),
    saveEstimate: (batchId: string, transferId: string, estimate: FeeEstimate, carried?: RunRecord) =>
      saveEstimate(s, { batchId, transferId }, estimate, carried),
    saveIntentStatus: (
      batchId: string,
      transferId: string,
      intentId: string,
      said: { status: string } | { untracked: true },
    ) => saveIntentStatus(s, { batchId, transferId }, intentId, said),
    transition: (batchId: string, transferId: string, change: TransitionChange) =>
      transition(s, { batchId, transferId }, change),
    /** The transfer's trace and route, for its run's spans (transfer-trace.ts). */
    traceFacts: (batchId: string, transferId: string) => readTraceFacts(s.redis, s.k, batchId, transferId),
    saveTraceRoot: (batchId: string, transferId: string, root: TraceRoot) =>
      saveTraceRoot(s.redis, s.k, { batchId, transferId }, root),
  };
}

const lockKey = (s: Store, batchId: string, transferId: string) =>
  `${s.k.transfer(batchId, transferId)}:lock`;

/** The batch's state sets, one per state: every key a move may touch is declared (Redis Cluster). */
const stateSetKeys = (s: Store, batchId: string): string[] =>
  TRANSFER_STATES.map((state) => s.k.batchState(batchId, state));

/** The keys a state change touches (TRANSITION): transfer, batch, lock, then the state sets. */
const moveKeys = (s: Store, batchId: string, transferId: string): string[] => [
  s.k.transfer(batchId, transferId),
  s.k.batch(batchId),
  lockKey(s, batchId, transferId),
  ...stateSetKeys(s, batchId),
];

async function loadTransfer(s: Store, at: TransferAt): Promise<TransferRecord | undefined> {
  const { batchId, transferId } = at;
  const raw = await s.redis.hgetall(s.k.transfer(batchId, transferId));
  return parseTransferRecord(batchId, raw);
}

/**
 * Writes saved-step fields (no state change), deleting the cleared ones (a counter such as
 * `ambiguous` must never be left an empty string: HINCRBY refuses it), in one step: one HSET, or a
 * MULTI with the HDEL. `carried` (a run's record) leaves out cleared fields it does not hold
 * (storedWrite), and comes back with the write laid over it (afterSave: the fields stored once,
 * nothing parsed again).
 */
async function saveSteps(
  s: Store,
  at: TransferAt,
  patch: StepsPatch,
  carried?: RunRecord,
): Promise<RunRecord | undefined> {
  const { batchId, transferId } = at;
  const key = s.k.transfer(batchId, transferId);
  const fields = fieldsOf(patch);
  const { sets, gone } = storedWrite(patch, carried, fields);
  const now = s.now();
  const pairs = [...sets, 'updated_at', String(now)];
  const after = carried && afterSave(carried, patch, { now }, fields);
  if (gone.length === 0) {
    await s.redis.hset(key, ...pairs);
    return after;
  }
  const replies = await s.redis
    .multi()
    .hset(key, ...pairs)
    .hdel(key, ...gone)
    .exec();
  const failed = replies?.find(([err]) => err);
  if (failed?.[0]) throw failed[0];
  return after;
}

/** A fee estimate as a run has it: saved alone (saveEstimate) or with a send's mark (SaveFence). */
export type FeeEstimate = StoredEstimate;

/**
 * What fences a save (fenced-save.lua): the run's lock token; with `known` (what the caller last
 * learnt of the primary, or '?') where the write landed is asked for; `carried`, the run's record
 * (storedWrite); `estimate`, the run's fee estimate not saved yet, written in the same step as the
 * record's `est_pending` (the batch's totals take it at the transfer's next move: fenced-save.lua).
 */
export type SaveFence = {
  readonly token: string;
  readonly known?: string;
  readonly carried?: RunRecord | undefined;
  readonly estimate?: FeeEstimate | undefined;
};

/**
 * The fenced save as a script call (fenced-save.lua): saved-step fields (and the fence's estimate)
 * written only while the fence's token holds the transfer's processing lock, and where the write
 * landed when `known` is given. Run by replica-acks.ts (writeAcked) for a send's mark, or by
 * saveFenced.
 */
function fencedSaveCall(s: Store, at: TransferAt, patch: StepsPatch, fence: SaveFence): FencedSaveCall {
  const { batchId, transferId } = at;
  const fields = fieldsOf(patch);
  const { sets, gone } = storedWrite(patch, fence.carried, fields);
  const est = fence.estimate;
  const now = s.now();
  return {
    script: FENCED_SAVE,
    keys: [s.k.transfer(batchId, transferId), lockKey(s, batchId, transferId), s.k.replicas],
    args: [
      fence.token,
      fence.known ?? '',
      est ? pendingEstimateOf(est) : '',
      ...sets,
      'updated_at',
      String(now),
      ...gone.flatMap((f) => [f, '']),
    ],
    record: fence.carried && afterSave(fence.carried, patch, { now, estimate: est }, fields),
  };
}

/** A fenced save's reply, read (fenced-save.lua's Output). */
export function fencedSaveOf(reply: unknown): FencedSave {
  const res = replyArray('fenced-save.lua', reply);
  if (replyInt('fenced-save.lua', res[0]) !== 1) return { held: false };
  const primary = replyString('fenced-save.lua', res[1], { orEmpty: true });
  const replicas = primary === '' ? 0 : replyInt('fenced-save.lua', res[2]);
  return { held: true, site: primary === '' ? undefined : { primary, replicas } };
}

/** A state a script answered with (transfer-move.lua's previous or current state). */
function stateOf(value: unknown): TransferState {
  const text = replyString('transfer-move.lua', value);
  const state = TRANSFER_STATES.find((s) => s === text);
  if (state === undefined)
    throw new LuaReplyError('USDC_LUA_REPLY', `transfer-move.lua: unknown state ${text}`);
  return state;
}

/**
 * Writes saved-step fields only while the fence's token holds the transfer's processing lock; the
 * fence's carried record comes back with the write laid over it.
 */
async function saveFenced(
  s: Store,
  at: TransferAt,
  patch: StepsPatch,
  fence: SaveFence,
): Promise<FencedSave> {
  const call = fencedSaveCall(s, at, patch, { ...fence, known: '' });
  const saved = fencedSaveOf(await runScript(s.redis, call.script, call.keys, call.args));
  return saved.held && call.record ? { ...saved, record: call.record } : saved;
}

/**
 * Exclusive processing of one transfer, whatever job runs it (a stalled job's second run, a retry
 * round, a settle job): `SET NX PX` with a token (token-lock.ts takeTokenLock). Returns false when
 * another holds it.
 */
async function lockTransfer(s: Store, at: TransferAt, token: string, ttlMs: number): Promise<boolean> {
  const { batchId, transferId } = at;
  return await takeTokenLock(s.redis, lockKey(s, batchId, transferId), token, ttlMs);
}

/** Field/value pairs as Redis answers HGETALL inside a script, as a record. */
function parseFlat(batchId: string, flat: unknown): TransferRecord | undefined {
  if (!Array.isArray(flat)) return undefined;
  const raw: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) raw[String(flat[i])] = String(flat[i + 1]);
  return parseTransferRecord(batchId, raw);
}

/**
 * The lock (as lockTransfer), the record and, when `move`, a queued transfer moved to
 * `in_progress`, in one step (see TAKE). Runs once per job run: the run goes on from the record
 * it returns.
 */
async function takeTransfer(
  s: Store,
  at: TransferAt,
  lock: { token: string; ttlMs: number },
  move: boolean,
): Promise<TakenTransfer> {
  const { batchId, transferId } = at;
  const res = await runScript(
    s.redis,
    TAKE,
    [
      s.k.transfer(batchId, transferId),
      s.k.batch(batchId),
      lockKey(s, batchId, transferId),
      s.k.paused,
      ...stateSetKeys(s, batchId),
    ],
    [
      lock.token,
      lock.ttlMs,
      transferId,
      String(s.now()),
      FINAL_STATES.join(','),
      randomBytes(9).toString('base64url'),
      move ? 'queued' : '',
      'in_progress',
    ],
  );
  const reply = replyArray('transfer-take.lua', res);
  if (replyInt('transfer-take.lua', reply[0]) !== 1) return { locked: false };
  const rec = parseFlat(batchId, reply[1]);
  try {
    return { locked: true, record: rec && runRecordOf(rec), paused: reply[2] === 'paused' };
  } catch (err) {
    // A damaged saved permit (InvalidSavedPermitError): nothing may be assumed; the run does not
    // go on, and the lock it took goes back.
    await unlockTransfer(s, at, lock.token).catch(() => {});
    throw err;
  }
}

/**
 * Appends a line, stamped with `at`, to the transfer's evidence (its newest EVIDENCE_LINES kept), in
 * one step: nothing reads the list first, so a line of another writer is never lost. `carried` (a
 * run's record) comes back with the list as stored.
 */
async function appendEvidence(
  s: Store,
  at: TransferAt,
  line: string,
  when: number,
  carried?: RunRecord,
): Promise<RunRecord | undefined> {
  const { batchId, transferId } = at;
  const stamped = `${new Date(when).toISOString()} ${clipEvidenceLine(line)}`;
  const reply = await runScript(
    s.redis,
    APPEND_EVIDENCE,
    [s.k.transfer(batchId, transferId)],
    [stamped, EVIDENCE_LINES],
  );
  return carried && afterEvidence(carried, replyString('evidence-append.lua', reply));
}

/** Extends the lock if still ours; false when it was lost. */
async function relockTransfer(s: Store, at: TransferAt, token: string, ttlMs: number): Promise<boolean> {
  const { batchId, transferId } = at;
  return (await runScript(s.redis, RELOCK, [lockKey(s, batchId, transferId)], [token, ttlMs])) === 1;
}

async function unlockTransfer(s: Store, at: TransferAt, token: string): Promise<void> {
  const { batchId, transferId } = at;
  await releaseTokenLock(s.redis, lockKey(s, batchId, transferId), token);
}

async function incrCounter(s: Store, at: TransferAt, field: TransferCounter, by: number): Promise<number> {
  const { batchId, transferId } = at;
  return await s.redis.hincrby(s.k.transfer(batchId, transferId), field, by);
}

/** Saves a fee estimate (see SAVE_ESTIMATE); `carried` (a run's record) comes back with it laid over. */
async function saveEstimate(
  s: Store,
  at: TransferAt,
  estimate: FeeEstimate,
  carried?: RunRecord,
): Promise<RunRecord | undefined> {
  const { batchId, transferId } = at;
  const { fee, netReceive } = estimate;
  await runScript(
    s.redis,
    SAVE_ESTIMATE,
    [s.k.transfer(batchId, transferId), s.k.batch(batchId)],
    [fee.total.toString(), fee.platform.toString(), fee.gas.toString(), netReceive.toString()],
  );
  return carried && afterEstimate(carried, estimate);
}

/** The record with an estimate laid over it, as saveEstimate writes it. */
export function withEstimate(rec: RunRecord, estimate: FeeEstimate): RunRecord {
  const { fee, netReceive } = estimate;
  return { ...rec, feeTotal: fee.total, feePlatform: fee.platform, feeGas: fee.gas, netReceive };
}

/**
 * What the service's status route said of the transfer's intent: its `status`, or that it does not
 * know the intent (`untracked`: a 404, after which nobody asks again); nothing is written when the
 * record says it already. Returns the transfer as the follower needs it, as it was before this write
 * (its `intentStatus` the one recorded until now); undefined — and nothing written — when the
 * transfer no longer records `intentId`.
 */
async function saveIntentStatus(
  s: Store,
  at: TransferAt,
  intentId: string,
  said: { status: string } | { untracked: true },
): Promise<FollowedTransfer | undefined> {
  const { batchId, transferId } = at;
  const status = 'status' in said ? said.status : '';
  const untracked = 'untracked' in said ? '1' : '';
  const res = await runScript(
    s.redis,
    SAVE_INTENT_STATUS,
    [s.k.transfer(batchId, transferId), s.k.batch(batchId)],
    [intentId, status, untracked, String(s.now()), ...FOLLOWED_FIELDS],
  );
  // 0: the transfer records another intent, or is gone (intent-status-save.lua's Output).
  if (res === 0) return undefined;
  return parseFollowedTransfer(batchId, transferId, replyOptionalStrings('intent-status-save.lua', res));
}

/**
 * A state change: to `to` if the current state is one of `expected` (any when empty), writing
 * `fields` (a `null` deletes the field) in the same atomic step.
 */
export type TransitionChange = {
  expected: readonly TransferState[];
  to: TransferState;
  fields?: StepsPatch;
  /**
   * The run's lock token (a run making its transfer final): a move frees the transfer's processing
   * lock in the same step, whoever holds it; a re-sent call of a move already made frees it only
   * while it holds this token (transfer-move.lua).
   */
  unlock?: string;
  /**
   * The record a run carries: it comes back (TransitionResult.run) with the move laid over it
   * (afterMove), as the script leaves it, so that the run goes on from it (pipeline/context.ts).
   */
  carried?: RunRecord | undefined;
  /**
   * The run's lock token the move is fenced by: made only while the transfer's processing lock
   * holds it, else nothing is written (`lockLost`): a run whose lock lapsed during a call, another
   * run holding the transfer now, changes nothing that run carries (docs/data-model.md).
   */
  fence?: string;
};

/** Moves the transfer (see TRANSITION): its previous state, or why it did not move. */
async function transition(s: Store, at: TransferAt, change: TransitionChange): Promise<TransitionResult> {
  const { batchId, transferId } = at;
  const pairs: string[] = [];
  for (const [f, v] of Object.entries(fieldsOf(change.fields ?? {}))) pairs.push(f, v);
  const now = s.now();
  const op = randomBytes(9).toString('base64url');
  const result = replyArray(
    'transfer-move.lua',
    await runScript(s.redis, TRANSITION, moveKeys(s, batchId, transferId), [
      change.expected.join(','),
      change.to,
      transferId,
      String(now),
      FINAL_STATES.join(','),
      op,
      change.unlock ?? '',
      change.fence ?? '',
      String(pairs.length / 2),
      ...pairs,
    ]),
  );
  const [code, cur, completed, flat] = result;
  const moved = replyInt('transfer-move.lua', code);
  if (moved === 1) {
    const previous = stateOf(cur);
    const generation = completed ? replyInt('transfer-move.lua', completed) : 0;
    const run =
      change.carried &&
      afterMove(change.carried, {
        to: change.to,
        patch: change.fields ?? {},
        now,
        op: `${op}|${previous}|${generation}`,
      });
    return {
      ok: true,
      previous,
      completedGeneration: generation || null,
      record: run ?? parseFlat(batchId, flat),
      run,
    };
  }
  if (moved === -2) return { ok: false, current: null, lockLost: true };
  return { ok: false, current: moved === -1 ? null : stateOf(cur) };
}
