import type { Redis } from 'ioredis';
import { luaScriptFile, runScript } from './lua-script.ts';

/*
 * Locks taken with a random token (`SET key token NX PX ttl`: the sweeper's, the audit file's, a
 * rebalancing policy's run lock) expire by themselves should their holder die, and are released by
 * their holder only: a holder whose lock expired while it was stalled, and which another then took,
 * must not delete the other's (scripts/lock-release.lua).
 */

const TAKE = luaScriptFile('lock-take.lua');
const RELEASE = luaScriptFile('lock-release.lua');

/**
 * Takes the lock `key` for `token` for `ttlMs`, or renews it where it holds `token` already, in one
 * script (scripts/lock-take.lua): a lock that lapses between a read and a renewal is never renewed
 * for whoever took it meanwhile. Whether `token` holds it now.
 */
export async function takeTokenLock(
  redis: Redis,
  key: string,
  token: string,
  ttlMs: number,
): Promise<boolean> {
  return (await runScript(redis, TAKE, [key], [token, ttlMs])) === 1;
}

/** Deletes the lock `key` only while it holds `token`; whether it did. */
export async function releaseTokenLock(redis: Redis, key: string, token: string): Promise<boolean> {
  return (await runScript(redis, RELEASE, [key], [token])) === 1;
}
