import type { Redis } from 'ioredis';
import { isChain, type Chain } from '../domain/chains.ts';
import { keys } from './keys.ts';
import { luaScriptFile, runScript } from './lua-script.ts';
import { replyStrings } from './lua-reply.ts';
import { intentIdOf } from './transfer-record.ts';

/*
 * The intents the workers follow on the service's status route (docs/data-model.md "Following
 * intents"): ZSET `P:follow`, member `<batchId>/<transferId>/<intentId>@<submittedAtMs>`, score the
 * time (ms) of its next poll. Batch and transfer ids hold no `/` ([A-Za-z0-9_.-]); an intent id may
 * hold `:`. One key, built from the prefix: on Redis Cluster it shares the `{usdc}` slot.
 */

/** One followed intent, as its member says. */
export type FollowedIntent = {
  readonly batchId: string;
  readonly transferId: string;
  readonly intentId: string;
  /** When it was submitted (ms): the follower's poll interval and give-up age count from it. */
  readonly submittedAt: number;
  /** The member itself, as stored. */
  readonly member: string;
};

const CLAIM = luaScriptFile('follow-claim.lua');

/**
 * A followed intent's transfer, as the follower needs it: whether it still records the intent, the
 * status recorded, and where its owner reservation and transfer jobs are. Read in one HMGET of
 * FOLLOWED_FIELDS (readFollowedTransfer), or returned by the script that records a status
 * (transfer-store.ts saveIntentStatus).
 */
export type FollowedTransfer = {
  readonly batchId: string;
  readonly id: string;
  readonly intentId: string | null;
  readonly intentStatus: string | null;
  readonly from: Chain;
  /** The EVM owner whose reservation it may hold (`owner`; null for SOLANA and before a permit). */
  readonly owner: string | null;
  /** Its job's round, and its payload generation (the settle job's id). */
  readonly round: number;
  readonly payloadGen: number | null;
  /** Its source transaction as stored (`tx_hash`), once the accepted send is recorded; else null. */
  readonly txHash: string | null;
};

/** The record fields a FollowedTransfer is read from, in this order. */
export const FOLLOWED_FIELDS = [
  'intent_id',
  'intent_status',
  'from',
  'owner',
  'round',
  'payload_gen',
  'tx_hash',
  'intent_id_rest',
] as const;

/** Parses FOLLOWED_FIELDS' values; undefined for a record with no source chain (gone, or not a transfer). */
export function parseFollowedTransfer(
  batchId: string,
  id: string,
  values: readonly (string | null | undefined)[],
): FollowedTransfer | undefined {
  const [intentId, intentStatus, from, owner, round, payloadGen, txHash, intentIdRest] = values;
  if (!from || !isChain(from)) return undefined;
  return {
    batchId,
    id,
    intentId: intentIdOf({ intent_id: intentId, intent_id_rest: intentIdRest }),
    intentStatus: intentStatus || null,
    from,
    owner: owner || null,
    round: Number(round || 0),
    payloadGen: payloadGen ? Number(payloadGen) : null,
    txHash: txHash || null,
  };
}

/** The followed intent's transfer (one HMGET); undefined when there is none. */
export async function readFollowedTransfer(
  redis: Redis,
  prefix: string,
  at: { readonly batchId: string; readonly transferId: string },
): Promise<FollowedTransfer | undefined> {
  const values = await redis.hmget(keys(prefix).transfer(at.batchId, at.transferId), ...FOLLOWED_FIELDS);
  return parseFollowedTransfer(at.batchId, at.transferId, values);
}

export function followMember(t: {
  batchId: string;
  transferId: string;
  intentId: string;
  submittedAt: number;
}): string {
  return `${t.batchId}/${t.transferId}/${t.intentId}@${Math.floor(t.submittedAt)}`;
}

/** Parses a member; undefined for one that is not of the form above. */
export function parseFollowMember(member: string): FollowedIntent | undefined {
  const m = /^([^/]+)\/([^/]+)\/(.+)@(\d+)$/.exec(member);
  if (!m) return undefined;
  const [, batchId, transferId, intentId, at] = m as unknown as [string, string, string, string, string];
  return { batchId, transferId, intentId, submittedAt: Number(at), member };
}

/**
 * Starts following an intent: its first poll at `firstPollAt`. A member already there keeps its
 * score (ZADD NX): a second call for the same submission changes nothing.
 */
export async function addFollowedIntent(
  redis: Redis,
  prefix: string,
  t: { batchId: string; transferId: string; intentId: string; submittedAt: number },
  firstPollAt: number,
): Promise<void> {
  await redis.zadd(keys(prefix).follow, 'NX', Math.floor(firstPollAt), followMember(t));
}

/** `text` with Redis's glob characters escaped, to MATCH itself. */
const globEscaped = (text: string) => text.replace(/[*?[\]\\]/g, '\\$&');

/**
 * Whether the follow set holds a member for this transfer's intent (of any submission time): a
 * ZSCAN of the whole set, for the rare re-run of a job whose transfer is submitted already
 * (pipeline/run-transfer.ts), never on the way of a submission.
 */
export async function followsIntent(
  redis: Redis,
  prefix: string,
  t: { readonly batchId: string; readonly transferId: string; readonly intentId: string },
): Promise<boolean> {
  const match = `${globEscaped(`${t.batchId}/${t.transferId}/${t.intentId}`)}@*`;
  let cursor = '0';
  do {
    const [next, found] = await redis.zscan(keys(prefix).follow, cursor, 'MATCH', match, 'COUNT', 1000);
    if (found.length > 0) return true;
    cursor = next;
  } while (cursor !== '0');
  return false;
}

/**
 * Claims up to `limit` intents whose poll is due (follow-claim.lua): each is re-scored to
 * `now + leaseMs`, so no other process polls it meanwhile. Members that do not parse are dropped.
 */
export async function claimDueIntents(
  redis: Redis,
  prefix: string,
  now: number,
  claim: { readonly leaseMs: number; readonly limit: number },
): Promise<FollowedIntent[]> {
  const args = [now, claim.leaseMs, claim.limit];
  const members = replyStrings(
    'follow-claim.lua',
    await runScript(redis, CLAIM, [keys(prefix).follow], args),
  );
  const out: FollowedIntent[] = [];
  for (const member of members) {
    const parsed = parseFollowMember(member);
    if (parsed) out.push(parsed);
    else await redis.zrem(keys(prefix).follow, member);
  }
  return out;
}

/** Its next poll at `at` (only while it is still followed: ZADD XX). */
export async function scheduleNextPoll(
  redis: Redis,
  prefix: string,
  intent: FollowedIntent,
  at: number,
): Promise<void> {
  await redis.zadd(keys(prefix).follow, 'XX', Math.floor(at), intent.member);
}

/** Claimed intents given back unpolled (a worker stopping): due again at `at`. */
export async function releaseClaims(
  redis: Redis,
  prefix: string,
  intents: readonly FollowedIntent[],
  at: number,
): Promise<void> {
  if (intents.length === 0) return;
  await redis.zadd(keys(prefix).follow, 'XX', ...intents.flatMap((i) => [Math.floor(at), i.member]));
}

/** Stops following it. */
export async function dropFollowedIntent(
  redis: Redis,
  prefix: string,
  intent: FollowedIntent,
): Promise<void> {
  await redis.zrem(keys(prefix).follow, intent.member);
}

/** How many intents are followed (for tests, benches and ops). */
export async function followedCount(redis: Redis, prefix: string): Promise<number> {
  return await redis.zcard(keys(prefix).follow);
}
