import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import type { Logger } from '../log/logger.ts';

/**
 * Worker processes say they are alive: each writes its member `<host>:<pid>:<random>` with the time
 * (ms) into the sorted set `<prefix>:workers` every HEARTBEAT_MS, and takes it out when it stops.
 * `/metrics` counts the members seen within ALIVE_WINDOW_MS (`usdc_batch_workers`), so "no worker
 * alive" is one alert whatever machine the workers run on — a process whose event loop is stuck
 * stops beating too, which a mere open connection would not show.
 */
export const HEARTBEAT_MS = 10_000;
export const ALIVE_WINDOW_MS = 35_000;
/** Members not seen for a day are dropped by the beats themselves (a killed worker never says goodbye). */
const FORGET_AFTER_MS = 24 * 3600 * 1000;

export function workersKey(prefix: string): string {
  return `${prefix}:workers`;
}

export function startHeartbeat(deps: {
  redis: Redis;
  prefix: string;
  sources: readonly string[];
  logger?: Logger;
}): { stop(): Promise<void> } {
  const key = workersKey(deps.prefix);
  const member = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}:${deps.sources.join(',')}`;
  const beat = async () => {
    const now = Date.now();
    await deps.redis
      .multi()
      .zadd(key, now, member)
      .zremrangebyscore(key, '-inf', now - FORGET_AFTER_MS)
      .exec();
  };
  const warn = (err: unknown) =>
    deps.logger?.warn({ err: { message: (err as Error).message } }, 'could not write the worker heartbeat');
  void beat().catch(warn);
  const timer = setInterval(() => void beat().catch(warn), HEARTBEAT_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await deps.redis.zrem(key, member).catch(() => {});
    },
  };
}

/** Worker processes that beat within the window. */
export async function workersAlive(redis: Redis, prefix: string, now: number): Promise<number> {
  return await redis.zcount(workersKey(prefix), now - ALIVE_WINDOW_MS, '+inf');
}
