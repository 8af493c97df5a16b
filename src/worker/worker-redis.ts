import type { Redis } from 'ioredis';
import type { Config } from '../config/config.ts';
import type { Logger } from '../log/logger.ts';
import { checkDurability, createRedis, VolatileRedisError, waitForRedis } from '../store/redis.ts';
import { checkRedisTls } from '../store/redis-tls.ts';

/**
 * The worker's Redis connection, once Redis answers and is known not to lose acknowledged writes
 * (or `ALLOW_VOLATILE_REDIS=true`). A connection that fails either check is closed before the error
 * is thrown: nothing is left open.
 */
export async function openWorkerRedis(
  config: Pick<
    Config,
    | 'redisUrl'
    | 'redisSentinels'
    | 'redisSentinelName'
    | 'redisSentinelPassword'
    | 'redisClusterNodes'
    | 'allowVolatileRedis'
  >,
  logger: Logger,
): Promise<Redis> {
  // Before any client connects: a TLS mismatch is said at once, and no half-open handshake is left.
  await checkRedisTls(config);
  const redis: Redis = createRedis(config, { role: 'worker', logger, quiet: true });
  try {
    await waitForRedis(redis, config);
    await refuseVolatileRedis(redis, config, logger);
    return redis;
  } catch (err) {
    redis.disconnect();
    throw err;
  }
}

async function refuseVolatileRedis(
  redis: Redis,
  config: Pick<Config, 'allowVolatileRedis'>,
  logger: Logger,
): Promise<void> {
  const durability = await checkDurability(redis);
  if (durability.durable === false) {
    if (!config.allowVolatileRedis) {
      throw new VolatileRedisError(
        'USDC_REDIS_VOLATILE',
        `Redis can lose acknowledged writes (${durability.reason}); the worker refuses to run on it`,
        { details: 'set ALLOW_VOLATILE_REDIS=true to run anyway (never with real money)' },
      );
    }
    logger.warn(
      { reason: durability.reason },
      'Redis is not durable; running anyway (ALLOW_VOLATILE_REDIS=true)',
    );
  } else if (durability.durable === 'unknown') {
    logger.warn({ reason: durability.reason }, 'cannot verify that Redis is durable');
  }
}
