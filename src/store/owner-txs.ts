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
 */

const ASSIGN = luaScriptFile('owner-tx-assign.lua');
const SAVE_SIGNED = luaScriptFile('owner-tx-save-signed.lua');
const GIVE_UP = luaScriptFile('owner-tx-give-up.lua');

/** A call an owner makes: where, what, and its gas limit. */
export type OwnerCallFields = {
  readonly to: string;
  readonly data: string;
  readonly value: bigint;
  readonly gas: bigint;
};

/** One signed version of a transaction, as saved. */
export type SavedTxVersion = {
  readonly version: number;
  readonly raw: string;
  readonly hash: string;
  readonly maxFee: bigint;
  readonly tip: bigint;
};

/** One transaction of an owner, as saved. */
export type SavedOwnerTx = OwnerCallFields & {
  readonly nonce: bigint;
  readonly callId: string;
  readonly versions: readonly SavedTxVersion[];
  /** The latest version's last broadcast (its version and the block then), if any. */
  readonly sent: { readonly version: number; readonly block: bigint } | undefined;
  /** The call was given up before it was signed: the nonce is filled by a zero-value self-transaction. */
  readonly filled: boolean;
  /** Recorded once mined: the version's hash, and whether it succeeded. */
  readonly done: { readonly hash: string; readonly success: boolean } | undefined;
  /** The head when the nonce was first seen used on chain with no receipt of ours found. */
  readonly usedSeenAt: bigint | undefined;
  /** When (unix ms) that was; undefined: not seen so, or saved without its time. */
  readonly usedSeenAtMs: number | undefined;
};

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

/** Records the transaction at `nonce` mined, as `hash` with its status. */
export async function markDone(
  redis: Redis,
  w: Where,
  nonce: bigint,
  done: { hash: string; success: boolean },
): Promise<void> {
  await redis.hset(accountKeys(w)[1], `${nonce}:done`, `${done.hash}|${done.success ? 1 : 0}`);
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

const HEAD_FIELDS = ['call', 'to', 'data', 'value', 'gas', 'v', 'sent', 'fill', 'done', 'used'] as const;

function parseVersion(version: number, raw: string | null, hash: string | null, fees: string | null) {
  const [maxFee, tip] = (fees ?? '').split('|');
  if (raw === null || hash === null || maxFee === undefined || tip === undefined)
    throw new UsdcBatchError(
      'USDC_OWNER_TX_RECORD',
      `owner transaction version ${version} is incomplete in Redis`,
    );
  return { version, raw, hash, maxFee: BigInt(maxFee), tip: BigInt(tip) };
}

function parsePair(text: string | null): [string, string] | undefined {
  if (text === null) return undefined;
  const bar = text.indexOf('|');
  return [text.slice(0, bar), text.slice(bar + 1)];
}

/** The transaction at `nonce` as saved; undefined when no call was given that nonce. */
export async function readOwnerTx(redis: Redis, w: Where, nonce: bigint): Promise<SavedOwnerTx | undefined> {
  const key = accountKeys(w)[1];
  const head = await redis.hmget(key, ...HEAD_FIELDS.map((f) => `${nonce}:${f}`));
  const [callId, to, data, value, gas, v, sent, fill, done, used] = head;
  if (callId === null || callId === undefined || v === null || v === undefined) return undefined;
  const count = Number(v);
  const fields: string[] = [];
  for (let i = 1; i <= count; i++)
    fields.push(`${nonce}:${i}:raw`, `${nonce}:${i}:hash`, `${nonce}:${i}:fees`);
  const flat = count > 0 ? await redis.hmget(key, ...fields) : [];
  const versions: SavedTxVersion[] = [];
  for (let i = 0; i < count; i++)
    versions.push(parseVersion(i + 1, flat[3 * i] ?? null, flat[3 * i + 1] ?? null, flat[3 * i + 2] ?? null));
  const sentPair = parsePair(sent ?? null);
  const donePair = parsePair(done ?? null);
  const usedSeen = parseUsed(used);
  return {
    nonce,
    callId,
    to: to ?? '',
    data: data ?? '0x',
    value: BigInt(value ?? '0'),
    gas: BigInt(gas ?? '0'),
    versions,
    sent: sentPair && { version: Number(sentPair[0]), block: BigInt(sentPair[1]) },
    filled: fill === '1',
    done: donePair && { hash: donePair[0], success: donePair[1] === '1' },
    usedSeenAt: usedSeen?.head,
    usedSeenAtMs: usedSeen?.atMs,
  };
}

/** The next nonce the account would give (undefined: none given yet), for `wallets` and tests. */
export async function nextNonce(redis: Redis, w: Where): Promise<bigint | undefined> {
  const v = await redis.hget(accountKeys(w)[0], 'next');
  return v === null ? undefined : BigInt(v);
}
