import type { RedisOptions } from 'ioredis';
import { displayUrl } from '../domain/url-display.ts';

/**
 * Where the project's Redis is (docs/configuration.md, docs/replicated-redis.md): `REDIS_URL`, or the
 * Sentinels (`REDIS_SENTINELS`) that name its current primary (`REDIS_SENTINEL_NAME`); the URL's
 * user, password, database and scheme (`rediss:` for TLS) apply either way. Every connection of
 * every process is made from this, so every one of them follows a failover by itself.
 */
export type RedisEndpoint = {
  readonly redisUrl: string;
  readonly redisSentinels?: readonly { readonly host: string; readonly port: number }[] | undefined;
  readonly redisSentinelName?: string | undefined;
  /** The Sentinels' own password (REDIS_SENTINEL_PASSWORD); the primary's is REDIS_URL's. */
  readonly redisSentinelPassword?: string | undefined;
};

/** ioredis options (also BullMQ's `connection`) for the endpoint, without the per-role ones. */
export function endpointOptions(e: RedisEndpoint): RedisOptions {
  const u = new URL(e.redisUrl);
  const tls = u.protocol === 'rediss:';
  const db = Number(u.pathname.replace(/^\//, '') || 0);
  const common: RedisOptions = {
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(Number.isInteger(db) && db > 0 ? { db } : {}),
  };
  if (e.redisSentinels && e.redisSentinelName) {
    return {
      ...common,
      sentinels: e.redisSentinels.map((s) => ({ host: s.host, port: s.port })),
      name: e.redisSentinelName,
      ...(e.redisSentinelPassword !== undefined ? { sentinelPassword: e.redisSentinelPassword } : {}),
      ...(tls ? { tls: {}, enableTLSForSentinelMode: true } : {}),
    };
  }
  const host = u.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1';
  return { ...common, host, port: Number(u.port || 6379), ...(tls ? { tls: { servername: host } } : {}) };
}

/**
 * What a message may show of the endpoint, naming its setting: `host:port (REDIS_URL)`, or the
 * primary's name and the Sentinels (`REDIS_SENTINELS`). Never a user name or password.
 */
export function describeEndpoint(e: RedisEndpoint): string {
  if (e.redisSentinels && e.redisSentinelName) {
    const list = e.redisSentinels.map((s) => `${s.host}:${s.port}`).join(',');
    return `the primary "${e.redisSentinelName}" of the Sentinels ${list} (REDIS_SENTINELS)`;
  }
  return `${displayUrl(e.redisUrl)} (REDIS_URL)`;
}
