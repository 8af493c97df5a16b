import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { UsdcBatchError } from '../domain/errors.ts';
import { keys } from './keys.ts';
import { luaScriptFile, runScript } from './lua-script.ts';
import { replyArray, replyBigint, replyInt, replyString } from './lua-reply.ts';
import type { ScriptCall, WriteSite } from './replica-acks.ts';

/*
 * A treasury owner's own transactions per chain (docs/data-model.md "Owner transactions", docs/cctp.md
 * "The owner's transactions"): the account nonces given to calls, in order with no gap, and each
 * transaction's call and signed versions, saved before any is broadcast. Two hashes per (chain,
 * owner), both built from the prefix (one slot on Redis Cluster):
 * - `P:otx:<chain>:<owner>`: `next` (the next nonce to give), `c:<call id>` → its nonce;
 * - `P:otx:<chain>:<owner>:txs`: per nonce `<n>:call`, `<n>:to`, `<n>:data`, `<n>:value`, `<n>:gas`,
 *   `<n>:v` (versions saved), `<n>:<i>:raw|hash|fees` (version i), `<n>:sent` (`<i>|<block>`: version
 *   i was last broadcast at that block), `<n>:fill` ('1': the call was given up, the nonce is filled by
 *   a zero-value self-transaction), `<n>:done` (`<hash>|<1 or 0>`: mined, and its status), `<n>:used`
 *   (`<head>|<unix ms>`: the head and the time when the nonce was first seen used with no receipt
 *   of ours; an older record holds the head alone).
 * Once mined (owner-tx-done.lua), a transaction keeps what says which call it was and how it went —
 * its call id, target and value, its calldata's digest (`<n>:cd`), each version's hash and fees, `fill`
 * and `done` — and drops what only sending needed: the calldata, the gas limit, the signed bytes, the
 * send and used-seen marks (a mint's calldata and signed bytes are ~2.6 KB, kept for good before).
 */

const ASSIGN = luaScriptFile('owner-tx-assign.lua');
const SAVE_SIGNED = luaScriptFile('owner-tx-save-signed.lua');
const GIVE_UP = luaScriptFile('owner-tx-give-up.lua');
const DONE = luaScriptFile('owner-tx-done.lua');

/** A call an owner makes: where, what, and its gas limit. */
export type OwnerCallFields = {
  readonly to: string;
  readonly data: string;
  readonly value: bigint;
  readonly gas: bigint;
};

/** A signed version of a transaction as kept once it is mined: its hash and fees. */
export type TxVersionFacts = {
  readonly version: number;
  readonly hash: string;
  readonly maxFee: bigint;
  readonly tip: bigint;
};

/** One signed version of a transaction, as saved: its signed bytes too. */
export type SavedTxVersion = TxVersionFacts & { readonly raw: string };

/** What a transaction's record says whether mined or not. */
type OwnerTxHead = {
  readonly nonce: bigint;
  readonly callId: string;
  readonly to: string;
  readonly value: bigint;
  /** The call was given up before it was signed: the nonce is filled by a zero-value self-transaction. */
  readonly filled: boolean;
};

/** One transaction of an owner, as saved, not noted mined: all it takes to sign, send and re-price it. */
export type SavedOwnerTx = OwnerTxHead &
  OwnerCallFields & {
    readonly versions: readonly SavedTxVersion[];
    /** The latest version's last broadcast (its version and the block then), if any. */
    readonly sent: { readonly version: number; readonly block: bigint } | undefined;
    readonly done?: undefined;
    /** The head when the nonce was first seen used on chain with no receipt of ours found. */
    readonly usedSeenAt: bigint | undefined;
    /** When (unix ms) that was; undefined: not seen so, or saved without its time. */
    readonly usedSeenAtMs: number | undefined;
  };

/** One transaction of an owner noted mined, as kept: which call it was (its calldata by digest) and how it went. */
export type MinedOwnerTx = OwnerTxHead & {
  /** callDataDigest of its calldata. */
  readonly dataDigest: string;
  readonly versions: readonly TxVersionFacts[];
  /** The version mined, and whether it succeeded. */
  readonly done: { readonly hash: string; readonly success: boolean };
};

/** A transaction's record: mined (`done`) or not. */
export type OwnerTxRecord = SavedOwnerTx | MinedOwnerTx;

/** The digest a mined transaction keeps of its calldata: SHA-256 of its lower-case hex. */
export function callDataDigest(data: string): string {
  return createHash('sha256').update(data.toLowerCase()).digest('hex');
}

/** What asking for a call's nonce found. */
export type AssignedNonce =
  | { readonly kind: 'assigned'; readonly nonce: bigint; readonly fresh: boolean }
  | { readonly kind: 'read-chain' };

/** What saving a signed version found. */
export type SavedSigned =
  | { readonly kind: 'saved'; readonly site: WriteSite }
  | { readonly kind: 'behind'; readonly versions: number }
  | { readonly kind: 'unknown' }
  | { readonly kind: 'refused' };

export type Where = { readonly prefix: string; readonly chain: string; readonly owner: string };

function accountKeys(w: Where): [string, string] {
  const k = keys(w.prefix);
  return [k.ownerAccount(w.chain, w.owner), k.ownerTxs(w.chain, w.owner)];
}

/** Gives `callId` its nonce, or the one it has (owner-tx-assign.lua). */
export async function assignNonce(
  redis: Redis,
  w: Where,
  callId: string,
  chainNonce: bigint | undefined,
  call: OwnerCallFields,
): Promise<AssignedNonce> {
  const script = 'owner-tx-assign.lua';
  const r = replyArray(
    script,
    await runScript(redis, ASSIGN, accountKeys(w), [
      callId,
      chainNonce?.toString() ?? '',
      call.to,
      call.data,
      call.value.toString(),
      call.gas.toString(),
    ]),
  );
  const code = replyInt(script, r[0]);
  if (code === 2) return { kind: 'read-chain' };
  return { kind: 'assigned', nonce: replyBigint(script, r[1]), fresh: code === 1 };
}

/** The nonce a call was given, if any. */
export async function nonceOfCall(redis: Redis, w: Where, callId: string): Promise<bigint | undefined> {
  const v = await redis.hget(accountKeys(w)[0], `c:${callId}`);
  return v === null ? undefined : BigInt(v);
}

/** A signed version to save (owner-tx-save-signed.lua). */
export type SignedVersion = {
  readonly nonce: bigint;
  readonly version: number;
  readonly kind: 'call' | 'fill';
  readonly raw: string;
  readonly hash: string;
  readonly maxFee: bigint;
  readonly tip: bigint;
};

/** The script call that saves `v`, for replica-acks.ts writeAcked (`known`: what it last learnt). */
export function saveSignedCall(w: Where, v: SignedVersion, known: string): ScriptCall {
  return {
    script: SAVE_SIGNED,
    keys: [accountKeys(w)[1], keys(w.prefix).replicas],
    args: [
      v.nonce.toString(),
      v.version,
      v.kind,
      v.raw,
      v.hash,
      `${v.maxFee.toString()}|${v.tip.toString()}`,
      known,
    ],
  };
}

/** The reply of owner-tx-save-signed.lua; undefined (a round cut off): whether it saved is unknown. */
export function savedSignedOf(reply: unknown): SavedSigned {
  const script = 'owner-tx-save-signed.lua';
  if (reply === undefined) return { kind: 'unknown' };
  const r = replyArray(script, reply);
  const code = replyInt(script, r[0]);
  if (code === 1)
    return {
      kind: 'saved',
      site: { primary: replyString(script, r[1], { orEmpty: true }), replicas: replyInt(script, r[2]) },
    };
  if (code === 0) return { kind: 'behind', versions: replyInt(script, r[1]) };
  return { kind: 'refused' };
}

/** Saves `v` with no replica to wait for (a standalone Redis, tests). */
export async function saveSigned(redis: Redis, w: Where, v: SignedVersion): Promise<SavedSigned> {
  const call = saveSignedCall(w, v, '');
  return savedSignedOf(await runScript(redis, call.script, call.keys, call.args));
}

/** What giving a call up found: given up (now or before), signed (never given up), or no such nonce. */
export type GiveUp =
  { readonly kind: 'given-up' } | { readonly kind: 'signed' } | { readonly kind: 'missing' };

/** Gives up the call at `nonce` unless it is signed (owner-tx-give-up.lua). */
export async function giveUpCall(redis: Redis, w: Where, nonce: bigint): Promise<GiveUp> {
  const script = 'owner-tx-give-up.lua';
  const r = replyArray(script, await runScript(redis, GIVE_UP, [accountKeys(w)[1]], [nonce.toString()]));
  const code = replyInt(script, r[0]);
  if (code === 1) return { kind: 'given-up' };
  return code === 0 ? { kind: 'signed' } : { kind: 'missing' };
}

/** Records that version `version` of the transaction at `nonce` was broadcast at `block`. */
export async function markSent(
  redis: Redis,
  w: Where,
  nonce: bigint,
  version: number,
  block: bigint,
): Promise<void> {
  await redis.hset(accountKeys(w)[1], `${nonce}:sent`, `${version}|${block}`);
}

/**
 * Records the transaction `saved` mined, as `hash` with its status, and drops what only sending it
 * needed (owner-tx-done.lua): its calldata is kept as its digest.
 */
export async function markDone(
  redis: Redis,
  w: Where,
  saved: Pick<SavedOwnerTx, 'nonce' | 'data'>,
  done: { hash: string; success: boolean },
): Promise<void> {
  await runScript(
    redis,
    DONE,
    [accountKeys(w)[1]],
    [saved.nonce.toString(), `${done.hash}|${done.success ? 1 : 0}`, callDataDigest(saved.data)],
  );
}

/** Records, once, the head and the time (unix ms) when the nonce was first seen used with no receipt of ours. */
export async function markUsedSeen(
  redis: Redis,
  w: Where,
  nonce: bigint,
  seen: { readonly head: bigint; readonly atMs: number },
): Promise<void> {
  await redis.hsetnx(accountKeys(w)[1], `${nonce}:used`, `${seen.head}|${seen.atMs}`);
}

/** `<head>|<unix ms>`, or the head alone (saved before the time was). */
function parseUsed(text: string | null | undefined): { head: bigint; atMs: number | undefined } | undefined {
  if (text === null || text === undefined) return undefined;
  const [head = '', atMs] = text.split('|');
  return { head: BigInt(head), atMs: atMs === undefined ? undefined : Number(atMs) };
}

const HEAD_FIELDS = [
  'call',
  'to',
  'data',
  'value',
  'gas',
  'v',
  'sent',
  'fill',
  'done',
  'used',
  'cd',
] as const;

function incomplete(version: number): UsdcBatchError {
  return new UsdcBatchError(
    'USDC_OWNER_TX_RECORD',
    `owner transaction version ${version} is incomplete in Redis`,
  );
}

function parseVersionFacts(version: number, hash: string | null, fees: string | null): TxVersionFacts {
  const [maxFee, tip] = (fees ?? '').split('|');
  if (hash === null || maxFee === undefined || tip === undefined) throw incomplete(version);
  return { version, hash, maxFee: BigInt(maxFee), tip: BigInt(tip) };
}

function parseVersion(version: number, raw: string | null, hash: string | null, fees: string | null) {
  if (raw === null) throw incomplete(version);
  return { ...parseVersionFacts(version, hash, fees), raw };
}

function parsePair(text: string | null): [string, string] | undefined {
  if (text === null) return undefined;
  const bar = text.indexOf('|');
  return [text.slice(0, bar), text.slice(bar + 1)];
}

/**
 * The transaction at `nonce` as saved: noted mined (MinedOwnerTx; one noted before mined records were
 * trimmed reads the same, its calldata's digest taken here) or not; undefined when no call was given
 * that nonce.
 */
export async function readOwnerTx(redis: Redis, w: Where, nonce: bigint): Promise<OwnerTxRecord | undefined> {
  const key = accountKeys(w)[1];
  const head = await redis.hmget(key, ...HEAD_FIELDS.map((f) => `${nonce}:${f}`));
  const [callId, to, data, value, gas, v, sent, fill, done, used, digest] = head;
  if (callId === null || callId === undefined || v === null || v === undefined) return undefined;
  const count = Number(v);
  const mined = parsePair(done ?? null);
  const perVersion = mined ? ['hash', 'fees'] : ['raw', 'hash', 'fees'];
  const fields: string[] = [];
  for (let i = 1; i <= count; i++) for (const f of perVersion) fields.push(`${nonce}:${i}:${f}`);
  const flat = count > 0 ? await redis.hmget(key, ...fields) : [];
  const at = (i: number, f: number) => flat[perVersion.length * i + f] ?? null;
  const common = { nonce, callId, to: to ?? '', value: BigInt(value ?? '0'), filled: fill === '1' };
  if (mined) {
    const versions: TxVersionFacts[] = [];
    for (let i = 0; i < count; i++) versions.push(parseVersionFacts(i + 1, at(i, 0), at(i, 1)));
    return {
      ...common,
      dataDigest: digest ?? callDataDigest(data ?? '0x'),
      versions,
      done: { hash: mined[0], success: mined[1] === '1' },
    };
  }
  const versions: SavedTxVersion[] = [];
  for (let i = 0; i < count; i++) versions.push(parseVersion(i + 1, at(i, 0), at(i, 1), at(i, 2)));
  const sentPair = parsePair(sent ?? null);
  const usedSeen = parseUsed(used);
  return {
    ...common,
    data: data ?? '0x',
    gas: BigInt(gas ?? '0'),
    versions,
    sent: sentPair && { version: Number(sentPair[0]), block: BigInt(sentPair[1]) },
    usedSeenAt: usedSeen?.head,
    usedSeenAtMs: usedSeen?.atMs,
  };
}

/** The next nonce the account would give (undefined: none given yet), for `wallets` and tests. */
export async function nextNonce(redis: Redis, w: Where): Promise<bigint | undefined> {
  const v = await redis.hget(accountKeys(w)[0], 'next');
  return v === null ? undefined : BigInt(v);
}
