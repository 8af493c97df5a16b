import type { Redis } from 'ioredis';
import { luaScript, runScript } from './lua-script.ts';

// A fixed one-second window shared by every worker process: INCR the window's counter; past the
// limit, wait for the next window. Simple and exact enough for "requests per second".
const TAKE = luaScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], 2000) end
return n
`);

/** `API_RATE_LIMIT`: requests per second to the service, across all workers. */
export function createRateLimiter(deps: { redis: Redis; prefix: string; perSecond: number }) {
  return {
    async take(signal?: AbortSignal): Promise<void> {
      for (;;) {
        const now = Date.now();
        const window = Math.floor(now / 1000);
        const n = (await runScript(deps.redis, TAKE, [`${deps.prefix}:ratelimit:${window}`], [])) as number;
        if (n <= deps.perSecond) return;
        if (signal?.aborted) throw signal.reason;
        await new Promise((r) => setTimeout(r, (window + 1) * 1000 - now + Math.random() * 20));
      }
    },
  };
}
