import type { Redis } from 'ioredis';
import { keys } from './keys.ts';
import { luaScriptFile, runScript } from './lua-script.ts';
import { LuaReplyError, replyArray, replyBigint, replyInt } from './lua-reply.ts';

/**
 * `NEW_RECIPIENT_MAX_USDC` (docs/access.md "Four eyes over the address book"): what an address
 * that is not known yet is paid **in all** — across finished and unfinished batches — until it is
 * known. Each row paying such an address is registered in `P:recipient-exposure:<recipient key>`
 * (HASH, member `<batch>/<transfer>`, value `<micro-USDC>|<registered ms>`) and the sums are read
 * in the same script (scripts/recipient-exposure.lua), so two enqueues racing to one new address
 * are judged one after the other: four batches of 90 under a cap of 100 are not all paid. A row
 * stops counting once it ended `failed`, `rejected` or `cancelled` (it paid nothing). Once the
 * address is known (added to the book by someone other than the batch's submitter, or by an
 * approval) the cap no longer applies to it.
 */
export type OpenPayment = {
  readonly recipientKey: string;
  readonly batchId: string;
  readonly transferId: string;
  readonly amount: bigint;
};

const EXPOSURE = luaScriptFile('recipient-exposure.lua');

// Long enough for any enqueue to write its batch; a crashed one's rows stop counting after it.
const UNWRITTEN_GRACE_MS = 60 * 60 * 1000;

const memberOf = (p: OpenPayment) => `${p.batchId}/${p.transferId}`;

/** Rounds of reading the members again when other enqueues keep registering rows meanwhile. */
const MAX_ROUNDS = 10;

/** The transfer record of a member `<batch>/<transfer>` (the batch id holds no '/'). */
function recordOf(prefix: string, member: string): string {
  const slash = member.indexOf('/');
  return keys(prefix).transfer(member.slice(0, slash), member.slice(slash + 1));
}

/** The members registered in `hashes` now (their records are declared to the script). */
async function registeredMembers(redis: Redis, hashes: readonly string[]): Promise<string[]> {
  const members = await Promise.all(hashes.map((h) => redis.hkeys(h)));
  return members.flat();
}

/**
 * Registers the rows and returns, per recipient key, what it is paid in all (these rows included),
 * and the registrations this call made (to take back if the enqueue is refused). The script is
 * given every key it reads (recipient-exposure.lua): the records of the rows registered, read here
 * first, and read again while another enqueue registers rows in between.
 */
export async function judgeExposure(
  redis: Redis,
  prefix: string,
  payments: readonly OpenPayment[],
  judged: { readonly batchId: string; readonly now: number },
): Promise<{ readonly sums: Map<string, bigint>; readonly registered: OpenPayment[] }> {
  if (payments.length === 0) return { sums: new Map(), registered: [] };
  const k = keys(prefix);
  const unique = [...new Set(payments.map((p) => p.recipientKey))];
  const hashes = unique.map((key) => k.recipientExposure(key));
  const index = new Map(unique.map((key, i) => [key, i + 1]));
  const triples = payments.flatMap((p) => [
    String(index.get(p.recipientKey)),
    memberOf(p),
    p.amount.toString(),
  ]);
  for (let round = 1; ; round++) {
    const members = [...new Set([...payments.map(memberOf), ...(await registeredMembers(redis, hashes))])];
    const reply = replyArray(
      'recipient-exposure.lua',
      await runScript(
        redis,
        EXPOSURE,
        [...hashes, ...members.map((m) => recordOf(prefix, m))],
        [
          String(hashes.length),
          String(judged.now),
          String(UNWRITTEN_GRACE_MS),
          judged.batchId,
          String(members.length),
          ...members,
          ...triples,
        ],
      ),
    );
    if (reply[0] !== 'again') return exposureOf(unique, payments, reply);
    if (round >= MAX_ROUNDS) {
      throw new LuaReplyError(
        'USDC_LUA_REPLY',
        `recipient-exposure.lua: rows kept being registered meanwhile (${MAX_ROUNDS} rounds); try again`,
      );
    }
  }
}

function exposureOf(
  unique: readonly string[],
  payments: readonly OpenPayment[],
  reply: readonly unknown[],
): { readonly sums: Map<string, bigint>; readonly registered: OpenPayment[] } {
  const [sums, added] = reply;
  const totals = replyArray('recipient-exposure.lua', sums);
  return {
    sums: new Map(unique.map((key, i) => [key, replyBigint('recipient-exposure.lua', totals[i] ?? '0')])),
    registered: replyArray('recipient-exposure.lua', added).map((n) => {
      const p = payments[replyInt('recipient-exposure.lua', n) - 1];
      if (!p) throw new LuaReplyError('USDC_LUA_REPLY', `recipient-exposure.lua: no triple ${String(n)}`);
      return p;
    }),
  };
}

/** Takes back the registrations of a batch whose enqueue was refused. */
export async function forgetOpenPayments(
  redis: Redis,
  prefix: string,
  payments: readonly OpenPayment[],
): Promise<void> {
  if (payments.length === 0) return;
  const k = keys(prefix);
  const pipe = redis.pipeline();
  for (const p of payments) pipe.hdel(k.recipientExposure(p.recipientKey), memberOf(p));
  await pipe.exec();
}
