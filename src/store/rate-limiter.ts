import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { luaScriptFile, runScript } from './lua-script.ts';

/**
 * A sliding one-second log shared by every worker process: a request goes only when fewer than the
 * limit went in the last second, so no second, wherever it starts, holds more than the limit. (A
 * fixed window, counting per calendar second, lets twice the limit through around each boundary,
 * and a service that limits over a sliding second answers 429 to the overflow.) One Redis clock,
 * `TIME`, serves every machine (scripts/rate-take.lua).
 */
const TAKE = luaScriptFile('rate-take.lua');

const WINDOW_MS = 1_000;

/**
 * `API_RATE_LIMIT`: requests per second to the service, across all workers; `name` another limit of
 * its own (`cctp:ratelimit`: Circle's attestation API).
 */
export function createRateLimiter(deps: { redis: Redis; prefix: string; perSecond: number; name?: string }) {
  const key = `${deps.prefix}:${deps.name ?? 'ratelimit'}`;
  return {
    async take(signal?: AbortSignal): Promise<void> {
      for (;;) {
        // A new member per try; a try re-sent after a lost reply (a Redis restart) finds its own
        // member and is not counted twice.
        const member = randomBytes(9).toString('base64url');
        const waitMs = Number(await runScript(deps.redis, TAKE, [key], [deps.perSecond, WINDOW_MS, member]));
        if (waitMs === 0) return;
        if (signal?.aborted) throw signal.reason;
        // Waiters of every process wake spread over a few ms, not all at the same instant.
        await new Promise((r) => setTimeout(r, waitMs + Math.random() * 10));
      }
    },
  };
}

/**
 * The same sliding second inside one process, for a command that runs without Redis (`enqueue
 * --dry-run`): it keeps that command's own requests under `API_RATE_LIMIT`, first come first
 * served. It cannot see what workers send meanwhile.
 */
export function createLocalRateLimiter(perSecond: number) {
  const sent: number[] = [];
  let queue: Promise<void> = Promise.resolve();
  const admit = async () => {
    for (;;) {
      const now = Date.now();
      while (sent.length > 0 && (sent[0] as number) <= now - WINDOW_MS) sent.shift();
      if (sent.length < perSecond) {
        sent.push(now);
        return;
      }
      await new Promise((r) => setTimeout(r, (sent[0] as number) + WINDOW_MS - now + 1));
    }
  };
  return {
    take(): Promise<void> {
      const turn = queue.then(admit);
      queue = turn;
      return turn;
    },
  };
}
