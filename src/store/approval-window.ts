import type { Redis } from 'ioredis';
import { keys } from './keys.ts';
import { luaScriptFile, runScript } from './lua-script.ts';
import { replyArray, replyBigint, replyInt } from './lua-reply.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * `APPROVAL_THRESHOLD_USDC` over the rolling 24 hours (docs/configuration.md): what was enqueued without
 * approval — whole batches, and the rows `retry` re-queued — is summed, and the enqueue that takes
 * the sum to the threshold (itself included) is held. Judging each batch alone let two batches of
 * 999.99 under a 1,000 threshold both run unheld.
 *
 * One script prunes entries older than 24 h, sums the rest and, in `count` mode, adds this entry
 * only when it stays under the threshold — so two enqueues at the same moment cannot both slip
 * under it. An entry is counted at most once (its member is its name). Held entries are not
 * counted: they run only with an approval. Nothing is given back when a batch is cancelled: it was
 * enqueued unapproved all the same (scripts/unapproved-judge.lua).
 */
const JUDGE = luaScriptFile('unapproved-judge.lua');

type WindowVerdict = { readonly reached: boolean; readonly before: bigint; readonly counted: boolean };

/**
 * `count`: judges the entry and, when it stays under the threshold, counts it. `peek` only judges
 * (for a batch already held for another reason: the reason may name the threshold too). `recheck`:
 * a worker judging a batch under its own threshold (docs/promises.md, promise 5) — as `count`, but
 * an entry the enqueuer already counted is judged again against the others, never counted twice.
 * Lua numbers are doubles: exact to 2^53 micro-USDC (9 billion USDC), far above any threshold.
 */
export async function judgeUnapproved(
  redis: Redis,
  prefix: string,
  entry: {
    member: string;
    amount: bigint;
    threshold: bigint;
    mode: 'count' | 'peek' | 'recheck';
    now: number;
  },
): Promise<WindowVerdict> {
  const k = keys(prefix);
  const [reached, before, counted] = replyArray(
    'unapproved-judge.lua',
    await runScript(
      redis,
      JUDGE,
      [k.unapproved, k.unapprovedAmounts],
      [
        entry.member,
        entry.amount.toString(),
        entry.threshold.toString(),
        String(entry.now),
        String(DAY_MS),
        entry.mode,
      ],
    ),
  );
  return {
    reached: replyInt('unapproved-judge.lua', reached) === 1,
    before: replyBigint('unapproved-judge.lua', before),
    counted: replyInt('unapproved-judge.lua', counted) === 1,
  };
}

/** Takes back an entry whose enqueue was refused after it was counted (nothing of it was written). */
export async function forgetUnapproved(redis: Redis, prefix: string, member: string): Promise<void> {
  const k = keys(prefix);
  await redis.multi().zrem(k.unapproved, member).hdel(k.unapprovedAmounts, member).exec();
}
