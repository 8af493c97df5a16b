import { userInfo } from 'node:os';
import type { Redis } from 'ioredis';
import type { Config, ConfigNeeds } from '../config/config.ts';
import { readEnv } from '../config/env-reader.ts';
import { loadConfig } from '../config/load-config.ts';
import { createLogger, type Logger } from '../log/logger.ts';
import { createProducer, type Producer } from '../queue/producer.ts';
import { createRedis, isRedisConnectionError, redisUnreachable } from '../store/redis.ts';
import { checkRedisTls } from '../store/redis-tls.ts';

/** What a CLI command needs: config, a fail-fast Redis client, a producer on demand, the actor. */
export type CliContext = {
  readonly config: Config;
  readonly logger: Logger;
  readonly redis: Redis;
  readonly prefix: string;
  /** `cli:<os user>`, for the audit trail. */
  readonly actor: string;
  producer(): Producer;
  close(): Promise<void>;
};

export function cliActor(): string {
  try {
    return `cli:${userInfo().username}`;
  } catch {
    return `cli:uid-${process.getuid?.() ?? 'unknown'}`;
  }
}

export function openCli(needs: ConfigNeeds = {}, config: Config = loadConfig(readEnv(), needs)): CliContext {
  const logger = createLogger(config.logLevel);
  const redis = createRedis(config.redisUrl, { role: 'client', logger, quiet: true });
  let producer: Producer | undefined;
  return {
    config,
    logger,
    redis,
    prefix: config.queuePrefix,
    actor: cliActor(),
    producer() {
      producer ??= createProducer({ connection: redis, prefix: config.queuePrefix });
      return producer;
    },
    async close() {
      await producer?.close();
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}

/** Runs `fn` with a context and always closes it. */
export async function withCli<T>(needs: ConfigNeeds, fn: (ctx: CliContext) => Promise<T>): Promise<T> {
  const config = loadConfig(readEnv(), needs);
  // Before the client connects: a TLS mismatch is said at once, and no half-open handshake is left.
  await checkRedisTls(config.redisUrl);
  const ctx = openCli(needs, config);
  try {
    return await fn(ctx);
  } catch (err) {
    throw isRedisConnectionError(err) ? redisUnreachable(ctx.config.redisUrl, err) : err;
  } finally {
    await ctx.close();
  }
}
