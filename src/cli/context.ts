import { userInfo } from 'node:os';
import type { Redis } from 'ioredis';
import type { Config, ConfigNeeds } from '../config/config.ts';
import { readEnv } from '../config/env-reader.ts';
import { loadConfig } from '../config/load-config.ts';
import { createLogger, type Logger } from '../log/logger.ts';
import type { Producer } from '../queue/producer.ts';
import { createRedis, isRedisConnectionError, redisUnreachable } from '../store/redis.ts';
import { acknowledged, createReplicaAcks, type ReplicaAcks } from '../store/replica-acks.ts';
import { checkRedisTls } from '../store/redis-tls.ts';
import type { AuditDeps } from '../store/audit.ts';
import { logAppendedHeads } from '../store/audit-head.ts';
import type { OpsDeps } from '../ops/ops-deps.ts';
import { warnOnControlDrift, type ControlDrift } from '../ops/control-drift.ts';
import { controlSettingsOf } from '../config/control-settings.ts';

/** What a CLI command needs: config, a fail-fast Redis client, a producer on demand, the actor. */
export type CliContext = {
  readonly config: Config;
  readonly logger: Logger;
  readonly redis: Redis;
  readonly prefix: string;
  /** `cli:<USDC_BATCH_OPERATOR or OS user>`: who acts, for the audit, `submitted_by` and approvals. */
  readonly actor: string;
  /** The producer, loaded on first use: a command that adds no jobs never loads BullMQ. */
  producer(): Promise<Producer>;
  /** Replica acknowledgements of this command's writes (docs/replicated-redis.md). */
  acks(): ReplicaAcks;
  /**
   * Runs an operator's action and returns once the replicas hold what it wrote (or throws a
   * ReplicasNotConfirmedError): print success only after this.
   */
  acknowledged<T>(act: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
};

/** `cli:<name>`: USDC_BATCH_OPERATOR when set (config.operatorName), else the OS user. */
export function cliActor(operatorName?: string): string {
  if (operatorName !== undefined) return `cli:${operatorName}`;
  try {
    return `cli:${userInfo().username}`;
  } catch {
    return `cli:uid-${process.getuid?.() ?? 'unknown'}`;
  }
}

export function openCli(needs: ConfigNeeds = {}, config: Config = loadConfig(readEnv(), needs)): CliContext {
  const logger = createLogger(config.logLevel, undefined, config.logFormat);
  const redis = createRedis(config, { role: 'client', logger, quiet: true });
  let producer: Producer | undefined;
  let acks: ReplicaAcks | undefined;
  const acksOf = () =>
    (acks ??= createReplicaAcks({
      redis,
      prefix: config.queuePrefix,
      setting: config.redisReplicaAcks,
      timeoutMs: config.redisReplicaAckTimeoutMs,
      logger,
    }));
  return {
    config,
    logger,
    redis,
    prefix: config.queuePrefix,
    actor: cliActor(config.operatorName),
    async producer() {
      const { createProducer } = await import('../queue/producer.ts');
      producer ??= createProducer({ connection: redis, prefix: config.queuePrefix });
      return producer;
    },
    acks: acksOf,
    acknowledged: (act) => acknowledged(acksOf(), act),
    async close() {
      // What this command appended to AUDIT_LOG_FILE, as an anchor in the logs (docs/audit.md).
      logAppendedHeads(logger);
      await producer?.close();
      await acks?.close();
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}

/** Where a command's audit entries go: the stream, and AUDIT_LOG_FILE when set. */
export function auditOf(ctx: CliContext): AuditDeps {
  return { redis: ctx.redis, prefix: ctx.prefix, auditLogFile: ctx.config.auditLogFile };
}

/** What an operator command acts with: Redis, a producer, who acts, where its audit goes. */
export async function opsOf(ctx: CliContext): Promise<OpsDeps> {
  return { ...auditOf(ctx), jobs: await ctx.producer(), actor: ctx.actor };
}

/**
 * Says at `warn`, naming the settings, when this command's controls differ from the running
 * workers' (docs/promises.md, promise 5): they enforce theirs before signing. Returns the drift.
 */
export async function warnOnWorkerControls(ctx: CliContext): Promise<ControlDrift | null> {
  return await warnOnControlDrift({
    redis: ctx.redis,
    prefix: ctx.prefix,
    settings: controlSettingsOf(ctx.config),
    logger: ctx.logger,
  });
}

/** Runs `fn` with a context and always closes it. */
export async function withCli<T>(needs: ConfigNeeds, fn: (ctx: CliContext) => Promise<T>): Promise<T> {
  const config = loadConfig(readEnv(), needs);
  // Before the client connects: a TLS mismatch is said at once, and no half-open handshake is left.
  await checkRedisTls(config);
  const ctx = openCli(needs, config);
  try {
    return await fn(ctx);
  } catch (err) {
    throw isRedisConnectionError(err) ? redisUnreachable(ctx.config, err) : err;
  } finally {
    await ctx.close();
  }
}
