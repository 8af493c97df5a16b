import type { Redis } from 'ioredis';
import { checksumEvmAddress } from '../../domain/addresses.ts';
import type { EvmChain } from '../../domain/chains.ts';
import { luaScript, runScript, type LuaScript } from '../../store/lua-script.ts';

/*
 * The Redis side of one (chain, owner)'s permit-nonce pool. Every change is one script, so that
 * every worker process sees a consistent pool. See nonce-manager.ts for why this is money-safe.
 *
 * HASH `P:nonce:<CHAIN>:<owner>`:
 *   next         the lowest nonce not known to be used (by a committed permit, or on chain)
 *   holder       the transfer holding the lease ("batchId/transferId"), absent when free
 *   held_nonce   the holder's in-flight nonce, once chosen
 *   lease_until  Redis TIME in ms (one clock for every machine) after which the lease may be taken
 *   settling     "<nonce>|<refused at, ms>" while the holder waits for the chain after a refusal
 *   hold_until   Redis TIME in ms until which no lease is handed out (the pool is held)
 *   hold_chain   the chain's nonce when the hold began: a reading above it ends the hold early
 *   hold_reason  why the pool is held, shown on every transfer that waits for it
 *   prep_holder  the transfer preparing the next permit while the holder's is in flight (the prepare
 *                slot; nonce-manager.ts says why this is safe)
 *   prep_nonce   the nonce it prepares: held_nonce + 1 when it was recorded
 *   prep_until   Redis TIME in ms until which the preparer counts as alive (it renews this each time
 *                it looks again); a slot past it is free and is never handed the lease
 *   handoffs     how many times a commit handed the lease straight to a preparer (a counter)
 *
 * ZSET `P:nonce:<CHAIN>:<owner>:review`: permits presumed used (their answer was lost; their
 * transfer is `needs_review`), member "<deadline, unix s>|<batchId>/<transferId>", score = nonce.
 * While one could still execute, no permit is signed at or below its nonce: the pool moves back
 * below a presumed-used nonce only once no presumed-used permit at or above it is left.
 *
 * ZSET `P:nonce:<CHAIN>:<owner>:used`: the last USED_KEPT nonces committed as accepted by the
 * service, member "<nonce>|<batchId>/<transferId>", score = nonce: which transfer's permit used a
 * nonce, so that a saved permit of another transfer with that nonce is known not to have paid
 * (pipeline/evm/permit-discard.ts). Written only after the service accepted the permit.
 */

/** Accepted commits remembered per (chain, owner): far more than any permit stays saved unsent. */
export const USED_KEPT = 1000;

/** The keys of one (chain, owner)'s pool. */
export type PoolKeys = {
  readonly chain: EvmChain;
  readonly owner: string;
  readonly pool: string;
  readonly review: string;
  /** The nonces committed as accepted, and by which transfer (the `used` set above). */
  readonly used: string;
  /** The channel a release publishes on, so a waiter in any process tries again at once. */
  readonly channel: string;
};

export function poolKeys(prefix: string, chain: EvmChain, owner: string): PoolKeys {
  const pool = `${prefix}:nonce:${chain}:${checksumEvmAddress(owner)}`;
  return {
    chain,
    owner,
    pool,
    review: `${pool}:review`,
    used: `${pool}:used`,
    channel: `${prefix}:nonce:released`,
  };
}

const NOW_MS = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/** Forgets the prepare slot: its nonce is no longer the one the pool would hand out next. */
const CLEAR_PREP = `
local function clear_prep(key)
  redis.call('HDEL', key, 'prep_holder', 'prep_nonce', 'prep_until')
end
`;

/** Frees the lease of KEYS[1] (and the prepare slot that went with it) and wakes one waiter on ARGV[chan]. */
const FREE_LEASE = `${CLEAR_PREP}
local function free_lease(key, channel)
  redis.call('HDEL', key, 'holder', 'held_nonce', 'lease_until', 'settling', 'prep_holder', 'prep_nonce', 'prep_until')
  redis.call('PUBLISH', channel, key)
end
`;

/**
 * ARGV: holder, lease ms, the chain's nonces(owner) or '', '1' when the caller may prepare the next
 * permit, prepare-slot ms. Returns {1, held_nonce} on re-entry, {2, nonce, expired_holder} when
 * taken (nonce = max(next, chain); nonces below it are used, ours committed or the chain's, so
 * `next` moves up to it and a release gives back exactly this nonce), {0, ms_left, '1' while
 * another waiter is its live preparer, else ''} when another holder has the lease, {3, ms_left, reason} while the pool is held (a chain reading above
 * `hold_chain` ends the hold: the chain moved past where it was stuck), and {4, nonce, ms_left}
 * when another holder has the lease and the caller is (now) its preparer: it may sign `nonce` and
 * save it unsent, then wait for the hand-off. The slot is offered only for held_nonce + 1, only
 * while the holder is not settling a refusal, and only when held_nonce + 1 is `next` or `next` + 1
 * (so it is never at or below a nonce known used, nor a presumed-used one: those are all below
 * `next`; and never while the holder's nonce is above `next`, which the chain will refuse).
 */
const ACQUIRE = `${NOW_MS}${CLEAR_PREP}
local h = redis.call('HMGET', KEYS[1], 'holder', 'held_nonce', 'lease_until', 'next', 'hold_until', 'hold_chain', 'hold_reason', 'prep_holder', 'prep_until', 'settling')
local holder, held, lease_until = h[1], h[2], tonumber(h[3] or '0')
if holder and holder ~= ARGV[1] and lease_until > now then
  if ARGV[4] == '1' and held and not h[10] then
    local want = tonumber(held) + 1
    local free = (not h[8]) or h[8] == ARGV[1] or tonumber(h[9] or '0') <= now
    local nxt = tonumber(h[4] or '0')
    if free and want >= nxt and want <= nxt + 1 then
      local nonce = string.format('%d', want)
      redis.call('HSET', KEYS[1], 'prep_holder', ARGV[1], 'prep_nonce', nonce, 'prep_until', now + tonumber(ARGV[5]))
      return {4, nonce, tostring(lease_until - now)}
    end
  end
  local preparing = ''
  if h[8] and h[8] ~= ARGV[1] and tonumber(h[9] or '0') > now then preparing = '1' end
  return {0, tostring(lease_until - now), preparing}
end
if holder == ARGV[1] and held then
  redis.call('HSET', KEYS[1], 'lease_until', now + tonumber(ARGV[2]))
  return {1, held}
end
local hold_until = tonumber(h[5] or '0')
if hold_until > now and (ARGV[3] == '' or tonumber(ARGV[3]) <= tonumber(h[6] or '-1')) then
  return {3, tostring(hold_until - now), h[7] or ''}
end
if h[5] then redis.call('HDEL', KEYS[1], 'hold_until', 'hold_chain', 'hold_reason') end
local nxt = tonumber(h[4] or '0')
if ARGV[3] ~= '' and tonumber(ARGV[3]) > nxt then nxt = tonumber(ARGV[3]) end
local nonce = string.format('%d', nxt)
redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'lease_until', now + tonumber(ARGV[2]), 'next', nonce, 'held_nonce', nonce)
redis.call('HDEL', KEYS[1], 'settling')
-- A slot prepared beside an earlier holder (expired, or gone) says nothing about this one's nonce.
clear_prep(KEYS[1])
local expired = ''
if holder and holder ~= ARGV[1] then expired = holder .. '@' .. (held or '-') end
return {2, nonce, expired}
`;

/** ARGV: holder, nonce. Moves the holder's lease to a nonce the chain shows as next (signed elsewhere). */
const MOVE_TO = `${NOW_MS}${CLEAR_PREP}
if redis.call('HGET', KEYS[1], 'holder') ~= ARGV[1] then return 0 end
local nxt = tonumber(redis.call('HGET', KEYS[1], 'next') or '0')
if tonumber(ARGV[2]) > nxt then redis.call('HSET', KEYS[1], 'next', ARGV[2]) end
redis.call('HSET', KEYS[1], 'held_nonce', ARGV[2], 'lease_until', now + tonumber(ARGV[3]))
redis.call('HDEL', KEYS[1], 'settling')
clear_prep(KEYS[1])
return 1
`;

/**
 * ARGV: holder, nonce, channel, for a permit presumed used its review member or '', hand-off ms.
 * The permit was accepted or may have executed: its nonce is used whoever holds the lease now.
 * When the holder commits its own held nonce n as accepted and a live preparer prepared n + 1 (and
 * `next` is now exactly n + 1), the lease goes straight to the preparer — holder := preparer,
 * held_nonce := n + 1, for hand-off ms (its next acquire is a re-entry and renews it to a full
 * lease) — and the wake-up names it ("<key>\n<preparer>"). Returns 2 on a hand-off, 1 when the
 * holder's lease was freed, 0 when the caller no longer held it.
 */
const COMMIT = `${NOW_MS}${FREE_LEASE}
local h = redis.call('HMGET', KEYS[1], 'next', 'holder', 'held_nonce', 'prep_holder', 'prep_nonce', 'prep_until', 'settling', 'handoffs')
local nxt = tonumber(h[1] or '0')
local after = tonumber(ARGV[2]) + 1
-- Written in one HSET with what follows: 'next' when it moves up.
local put = {}
if after > nxt then
  nxt = after
  table.insert(put, 'next')
  table.insert(put, string.format('%d', after))
end
if ARGV[4] ~= '' then
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[4])
else
  redis.call('ZADD', KEYS[3], ARGV[2], ARGV[2] .. '|' .. ARGV[1])
  redis.call('ZREMRANGEBYRANK', KEYS[3], 0, -${USED_KEPT + 1})
end
if h[2] == ARGV[1] then
  local prep = h[4]
  if ARGV[4] == '' and prep and prep ~= ARGV[1] and tonumber(h[6] or '0') > now and h[3] == ARGV[2]
      and tonumber(h[5]) == after and nxt == after then
    for _, x in ipairs({ 'holder', prep, 'held_nonce', h[5], 'lease_until', now + tonumber(ARGV[5]),
        'handoffs', string.format('%d', tonumber(h[8] or '0') + 1) }) do table.insert(put, x) end
    redis.call('HSET', KEYS[1], unpack(put))
    if h[7] then
      redis.call('HDEL', KEYS[1], 'settling', 'prep_holder', 'prep_nonce', 'prep_until')
    else
      clear_prep(KEYS[1])
    end
    redis.call('PUBLISH', ARGV[3], KEYS[1] .. '\\n' .. prep)
    return 2
  end
  if #put > 0 then redis.call('HSET', KEYS[1], unpack(put)) end
  free_lease(KEYS[1], ARGV[3])
  return 1
end
if #put > 0 then redis.call('HSET', KEYS[1], unpack(put)) end
-- A commit by a transfer that lost the lease: a prepared nonce now known used is void.
if h[4] and tonumber(h[5]) < nxt then clear_prep(KEYS[1]) end
return 0
`;

/** ARGV: holder, channel. The permit can never execute: `next` stays at its nonce, which the next holder gets. */
const RELEASE = `${FREE_LEASE}
if redis.call('HGET', KEYS[1], 'holder') == ARGV[1] then
  free_lease(KEYS[1], ARGV[2])
  return 1
end
return 0
`;

/**
 * ARGV: holder, lease ms, and "<nonce>|<refused at>" while settling a refusal (or ''). A holder
 * settling a refusal does not know its next nonce yet: the prepare slot is void.
 */
const EXTEND = `${NOW_MS}${CLEAR_PREP}
if redis.call('HGET', KEYS[1], 'holder') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'lease_until', now + tonumber(ARGV[2]))
if ARGV[3] ~= '' then
  redis.call('HSET', KEYS[1], 'settling', ARGV[3])
  clear_prep(KEYS[1])
end
return 1
`;

/**
 * ARGV: holder, nonce, lease ms. A preparer woken by the commit that named it confirms the hand-off:
 * it holds the lease at `nonce`, renewed to a full lease. Returns 1, or 0 when it does not (the
 * hand-off lease lapsed before it came).
 */
const CONFIRM = `${NOW_MS}
local h = redis.call('HMGET', KEYS[1], 'holder', 'held_nonce')
if h[1] ~= ARGV[1] or h[2] ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'lease_until', now + tonumber(ARGV[3]))
return 1
`;

/**
 * ARGV: holder, channel. A preparer stops waiting (it gives up, shuts down, or could not prepare):
 * its slot is freed for another waiter. If the lease was handed to it after it last looked, it
 * never sent under it (a permit is sent only once acquire returned the lease): the lease is freed
 * and its nonce goes back to the pool, as a release would. Returns 2 for that, 1 for a slot, 0 else.
 */
const UNPREPARE = `${FREE_LEASE}
local h = redis.call('HMGET', KEYS[1], 'holder', 'prep_holder')
if h[2] == ARGV[1] then
  clear_prep(KEYS[1])
  redis.call('PUBLISH', ARGV[2], KEYS[1])
  return 1
end
if h[1] == ARGV[1] then
  free_lease(KEYS[1], ARGV[2])
  return 2
end
return 0
`;

/**
 * ARGV: holder, ms, the chain's nonce, reason, channel. The holder learned that no permit of this
 * owner can go through for now: it frees its lease and holds the pool, so every other transfer
 * waits with the reason instead of being refused in turn.
 */
const HOLD = `${NOW_MS}${FREE_LEASE}
if redis.call('HGET', KEYS[1], 'holder') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'hold_until', now + tonumber(ARGV[2]), 'hold_chain', ARGV[3], 'hold_reason', ARGV[4])
free_lease(KEYS[1], ARGV[5])
return 1
`;

/**
 * ARGV: review member, verdict ('used' | 'unused'), the chain's nonce at the deciding block,
 * channel. A presumed-used permit is settled. Proven unused (at a block past its deadline, the
 * chain at or below its nonce): once no presumed-used permit at or above the chain's nonce is
 * left, `next` moves back down to it (an in-flight holder keeps its nonce: a refusal will tell
 * it) and any hold ends. Returns 2 when the pool moved back, 1 otherwise.
 */
const SETTLE_DOUBT = `${CLEAR_PREP}
redis.call('ZREM', KEYS[2], ARGV[1])
if ARGV[2] ~= 'unused' then return 1 end
if redis.call('ZCOUNT', KEYS[2], ARGV[3], '+inf') > 0 then return 1 end
local nxt = tonumber(redis.call('HGET', KEYS[1], 'next') or '0')
if tonumber(ARGV[3]) < nxt then redis.call('HSET', KEYS[1], 'next', ARGV[3]) end
redis.call('HDEL', KEYS[1], 'hold_until', 'hold_chain', 'hold_reason')
-- The in-flight holder's nonce is now above the chain's: it will be refused, so n + 1 is moot.
clear_prep(KEYS[1])
redis.call('PUBLISH', ARGV[4], KEYS[1])
return 2
`;

export const POOL_SCRIPTS = {
  acquire: luaScript(ACQUIRE),
  moveTo: luaScript(MOVE_TO),
  commit: luaScript(COMMIT),
  release: luaScript(RELEASE),
  extend: luaScript(EXTEND),
  hold: luaScript(HOLD),
  unprepare: luaScript(UNPREPARE),
  confirm: luaScript(CONFIRM),
  settleDoubt: luaScript(SETTLE_DOUBT),
} as const satisfies Record<string, LuaScript>;

export function runPoolScript(
  redis: Redis,
  script: LuaScript,
  keys: PoolKeys,
  args: readonly (string | number)[],
): Promise<unknown> {
  return runScript(redis, script, [keys.pool, keys.review, keys.used], args);
}

/** The review member of a presumed-used permit. */
export function doubtMember(deadline: bigint, holder: string): string {
  return `${deadline}|${holder}`;
}
