import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from '../log/logger.ts';
import { UsdcBatchError } from '../domain/errors.ts';

/**
 * Connections. Workers use `maxRetriesPerRequest: null` (BullMQ's production guide: a command waits
 * through a Redis restart instead of failing the job); producers and CLI reads fail fast.
 */
export function createRedis(
  url: string,
  options: { role: 'worker' | 'client'; logger?: Logger | undefined; extra?: RedisOptions },
): Redis {
  const { role, logger, extra } = options;
  const redis = new Redis(url, {
    maxRetriesPerRequest: role === 'worker' ? null : 2,
    enableOfflineQueue: true,
    connectTimeout: 5_000,
    // Commands issued in the same tick go out in one write: many concurrent transfers each make
    // small reads and writes, and one syscall per command was measurable (BENCHMARKS.md §2).
    enableAutoPipelining: true,
    // Reconnect forever with a capped delay: a Redis restart must be survived by itself.
    retryStrategy: (times) => Math.min(times * 200, 2_000),
    ...extra,
  });
  let last = 0;
  redis.on('error', (err: Error) => {
    // One line per 5 s at most: a Redis outage must not flood the log.
    if (Date.now() - last > 5_000) {
      last = Date.now();
      logger?.warn(
        { err: { message: err.message, code: (err as NodeJS.ErrnoException).code } },
        'redis connection error',
      );
    }
  });
  return redis;
}

/** Strips credentials from a Redis URL before it appears in a message. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(invalid url)';
  }
}

export type Durability =
  { durable: true } | { durable: false; reason: string } | { durable: 'unknown'; reason: string };

/**
 * PRODUCT.md §3: the worker refuses a Redis that can lose acknowledged writes (`appendonly` off,
 * or `appendfsync` other than `always`), and warns where it cannot ask (`CONFIG` disabled).
 */
export async function checkDurability(redis: Redis): Promise<Durability> {
  let aof: string[];
  let fsync: string[];
  try {
    aof = (await redis.call('CONFIG', 'GET', 'appendonly')) as string[];
    fsync = (await redis.call('CONFIG', 'GET', 'appendfsync')) as string[];
  } catch (err) {
    return {
      durable: 'unknown',
      reason: `CONFIG GET is not allowed (${(err as Error).message.slice(0, 80)})`,
    };
  }
  const appendonly = aof[1];
  const appendfsync = fsync[1];
  if (appendonly !== 'yes') {
    return { durable: false, reason: `appendonly is "${appendonly ?? '?'}": set appendonly yes` };
  }
  if (appendfsync !== 'always') {
    return { durable: false, reason: `appendfsync is "${appendfsync ?? '?'}": set appendfsync always` };
  }
  return { durable: true };
}

export class VolatileRedisError extends UsdcBatchError {
  override name = 'VolatileRedisError';
}
