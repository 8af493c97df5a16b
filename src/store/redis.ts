import type { Redis, RedisOptions } from 'ioredis';
import type { Logger } from '../log/logger.ts';
import { UsdcBatchError } from '../domain/errors.ts';
import { describeEndpoint, everyServer, openConnection, type RedisEndpoint } from './redis-endpoint.ts';

export type { RedisEndpoint } from './redis-endpoint.ts';

/** Rounds over the Sentinels a command makes before it says Redis cannot be reached. */
const SENTINEL_TRIES_AT_START = 3;

/**
 * Connections. Workers use `maxRetriesPerRequest: null` (BullMQ's production guide: a command waits
 * through a Redis restart instead of failing the job); producers and CLI reads fail fast.
 */
export function createRedis(
  endpoint: RedisEndpoint,
  options: {
    role: 'worker' | 'client';
    logger?: Logger | undefined;
    extra?: RedisOptions;
    /**
     * No log lines until the first connection: a command that cannot reach Redis at start says so
     * once, as a RedisUnreachableError; outages after that are logged as usual.
     */
    quiet?: boolean;
  },
): Redis {
  const { role, logger, extra, quiet } = options;
  let connected = false;
  // Before a first connection, a client gives up as on an unreachable REDIS_URL (below).
  const giveUp = (times: number) => !connected && role === 'client' && times > SENTINEL_TRIES_AT_START;
  const redis = openConnection(
    endpoint,
    {
      // Sentinels none of which answers (down, or refusing REDIS_SENTINEL_PASSWORD) before a first
      // connection: a command gives up as it does on an unreachable REDIS_URL; after one, a process
      // waits through a Sentinel outage as through a Redis restart.
      sentinelRetryStrategy: (times) => (giveUp(times) ? null : Math.min(times * 200, 2_000)),
      maxRetriesPerRequest: role === 'worker' ? null : 2,
      enableOfflineQueue: true,
      connectTimeout: 5_000,
      // Commands issued in the same tick go out in one write: many concurrent transfers each make
      // small reads and writes, and one syscall per command was measurable (BENCHMARKS.md §2).
      enableAutoPipelining: true,
      // Reconnect forever with a capped delay: a Redis restart must be survived by itself.
      retryStrategy: (times) => Math.min(times * 200, 2_000),
      ...extra,
    },
    {
      // A Cluster's seed nodes, as the Sentinels: retried for ever once connected.
      retry: (times) => (giveUp(times) ? null : Math.min(times * 200, 2_000)),
      waitFailover: role === 'worker',
    },
  );
  let last = 0;
  redis.once('ready', () => (connected = true));
  redis.on('error', (err: Error) => {
    // One line per 5 s at most: a Redis outage must not flood the log.
    if ((connected || !quiet) && Date.now() - last > 5_000) {
      last = Date.now();
      logger?.warn(
        { err: { message: err.message, code: (err as NodeJS.ErrnoException).code } },
        'redis connection error',
      );
    }
  });
  return redis;
}

class RedisUnreachableError extends UsdcBatchError {
  override name = 'RedisUnreachableError';
}

const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'ECONNRESET',
  'EHOSTUNREACH',
]);

/**
 * True for ioredis's ways of saying "no connection" (its retries per request ran out, the
 * connection closed or timed out, the host refused): not for errors Redis itself answered.
 */
export function isRedisConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === 'MaxRetriesPerRequestError') return true;
  const code = (err as NodeJS.ErrnoException).code;
  if (code !== undefined && CONNECTION_CODES.has(code)) return true;
  if (err.name === 'ClusterAllFailedError') return true;
  return /^(Connection is closed|connect ETIMEDOUT|Stream isn't writeable|Too many Cluster redirections)/.test(
    err.message,
  );
}

/** The one line an operator sees when Redis cannot be reached: where, and its setting; no secret. */
export function redisUnreachable(endpoint: RedisEndpoint, cause?: unknown): RedisUnreachableError {
  return new RedisUnreachableError(
    'USDC_REDIS_UNREACHABLE',
    `cannot reach Redis at ${describeEndpoint(endpoint)}: is redis-server running there?`,
    cause === undefined ? {} : { cause },
  );
}

/**
 * Waits until `redis` answers PING, at most `timeoutMs`: a command that starts on an unreachable
 * Redis stops with one clear line instead of retrying unseen (a worker's connection would wait for
 * ever). A Redis restarting at that moment is waited for; once started, connections ride through
 * restarts.
 */
export async function waitForRedis(redis: Redis, endpoint: RedisEndpoint, timeoutMs = 10_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      redis.ping(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(redisUnreachable(endpoint)), timeoutMs);
      }),
    ]);
  } catch (err) {
    if (err instanceof RedisUnreachableError) throw err;
    throw isRedisConnectionError(err) ? redisUnreachable(endpoint, err) : err;
  } finally {
    clearTimeout(timer);
  }
}

type Durability =
  { durable: true } | { durable: false; reason: string } | { durable: 'unknown'; reason: string };

/**
 * docs/configuration.md: the worker refuses a Redis that can lose acknowledged writes (`appendonly` off,
 * or `appendfsync` other than `always`), and warns where it cannot ask (`CONFIG` disabled). On a
 * Redis Cluster every server is asked, replicas too (a replica promoted keeps what it holds).
 */
export async function checkDurability(redis: Redis): Promise<Durability> {
  const servers = everyServer(redis);
  if (servers.length === 0) return { durable: 'unknown', reason: 'the Redis Cluster named no node' };
  let unknown: Durability | undefined;
  for (const server of servers) {
    const d = await serverDurability(server);
    if (d.durable === false) return d;
    if (d.durable === 'unknown') unknown ??= d;
  }
  return unknown ?? { durable: true };
}

async function serverDurability(redis: Redis): Promise<Durability> {
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
