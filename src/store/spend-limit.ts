import type { Redis } from 'ioredis';
import { keys } from './keys.ts';
import { luaScript, runScript } from './lua-script.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * `MAX_DAILY_USDC`: what all batches send in any rolling 24 hours, across every worker process.
 * One Lua script prunes reservations older than 24 h, then reserves the transfer's amount only if
 * the total stays within the cap. A transfer is reserved at most once (its member is its key), so
 * a re-run never counts it twice (and re-stamps it: the window counts from its latest send); a
 * reservation is released only when nothing was sent.
 *
 * KEYS: spend zset (member → time), amounts hash (member → micro-USDC), total string
 * ARGV: member, amount, cap, now, window
 * Returns {1, total} reserved (or already reserved), {0, total, retry_at} over the cap.
 */
const RESERVE = luaScript(`
local now = tonumber(ARGV[4])
local cutoff = now - tonumber(ARGV[5])
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', cutoff)
local total = tonumber(redis.call('GET', KEYS[3]) or '0')
for _, m in ipairs(old) do
  total = total - tonumber(redis.call('HGET', KEYS[2], m) or '0')
  redis.call('HDEL', KEYS[2], m)
  redis.call('ZREM', KEYS[1], m)
end
if total < 0 then total = 0 end
redis.call('SET', KEYS[3], string.format('%d', total))
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  -- Already counted: never twice. Re-stamped, so it leaves the window 24 h after its latest send.
  redis.call('ZADD', KEYS[1], now, ARGV[1])
  return {1, string.format('%d', total), '0'}
end
local amount = tonumber(ARGV[2])
if total + amount > tonumber(ARGV[3]) then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  local retry = now + 60000
  if first[2] then retry = tonumber(first[2]) + tonumber(ARGV[5]) end
  return {0, string.format('%d', total), string.format('%d', retry)}
end
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('SET', KEYS[3], string.format('%d', total + amount))
return {1, string.format('%d', total + amount), '0'}
`);

const RELEASE = luaScript(`
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
local amount = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
local total = tonumber(redis.call('GET', KEYS[3]) or '0') - amount
if total < 0 then total = 0 end
redis.call('SET', KEYS[3], string.format('%d', total))
return 1
`);

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
      const [ok, used, retry] = (await runScript(deps.redis, RESERVE, ks, [
        member,
        amount.toString(),
        deps.cap.toString(),
        String(now()),
        String(DAY_MS),
      ])) as [number, string, string];
      return ok === 1
        ? { ok: true, used: BigInt(used) }
        : { ok: false, used: BigInt(used), retryAt: Number(retry) };
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
