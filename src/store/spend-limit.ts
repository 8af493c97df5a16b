import type { Redis } from 'ioredis';
import { keys } from './keys.ts';
import { luaScriptFile, runScript } from './lua-script.ts';
import { replyArray, replyBigint, replyInt } from './lua-reply.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * `MAX_DAILY_USDC`: what all batches send in any rolling 24 hours, across every worker process.
 * One Lua script prunes reservations older than 24 h, then reserves the transfer's amount only if
 * the total stays within the cap. A transfer is reserved at most once (its member is its key), so
 * a re-run never counts it twice (and re-stamps it: the window counts from its latest send); a
 * reservation is released only when nothing was sent (scripts/spend-reserve.lua, spend-release.lua).
 */
const RESERVE = luaScriptFile('spend-reserve.lua');

const RELEASE = luaScriptFile('spend-release.lua');

type Reservation =
  | { readonly ok: true; readonly used: bigint }
  | { readonly ok: false; readonly used: bigint; readonly retryAt: number };

export function createSpendLimit(deps: { redis: Redis; prefix: string; cap: bigint; now?: () => number }) {
  const k = keys(deps.prefix);
  const now = deps.now ?? Date.now;
  const ks = [k.spend, k.spendAmounts, `${k.spend}:total`];
  // Lua numbers are doubles: exact to 2^53 micro-USDC (9 billion USDC), far above any daily cap.
  return {
    cap: deps.cap,
    async reserve(member: string, amount: bigint): Promise<Reservation> {
      const [ok, used, retry] = replyArray(
        'spend-reserve.lua',
        await runScript(deps.redis, RESERVE, ks, [
          member,
          amount.toString(),
          deps.cap.toString(),
          String(now()),
          String(DAY_MS),
        ]),
      );
      const total = replyBigint('spend-reserve.lua', used);
      return replyInt('spend-reserve.lua', ok) === 1
        ? { ok: true, used: total }
        : { ok: false, used: total, retryAt: replyInt('spend-reserve.lua', retry) };
    },
    async release(member: string): Promise<void> {
      await runScript(deps.redis, RELEASE, ks, [member]);
    },
  };
}
export type SpendLimit = ReturnType<typeof createSpendLimit>;

/**
 * What the rolling 24 hours hold under `MAX_DAILY_USDC` now, read only (for `/metrics`): the running
 * total less the reservations older than 24 h that no reservation has pruned yet (few: every
 * reserve prunes them).
 */
export async function readDailySpend(redis: Redis, prefix: string, now: number): Promise<bigint> {
  const k = keys(prefix);
  const [total, stale] = await Promise.all([
    redis.get(`${k.spend}:total`),
    redis.zrangebyscore(k.spend, '-inf', now - DAY_MS),
  ]);
  let sum = BigInt(total && /^[0-9]+$/.test(total) ? total : '0');
  if (stale.length > 0) {
    const amounts = await redis.hmget(k.spendAmounts, ...stale);
    for (const a of amounts) if (a && /^[0-9]+$/.test(a)) sum -= BigInt(a);
  }
  return sum < 0n ? 0n : sum;
}
