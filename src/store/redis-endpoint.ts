import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { displayUrl } from '../domain/url-display.ts';

/**
 * Where the project's Redis is (docs/configuration.md, docs/replicated-redis.md): `REDIS_URL`, or the
 * Sentinels (`REDIS_SENTINELS`) that name its current primary (`REDIS_SENTINEL_NAME`); the URL's
 * user, password, database and scheme (`rediss:` for TLS) apply either way; or the seed nodes of a
 * Redis Cluster (`REDIS_CLUSTER_NODES`, docs/scaling.md), whose slot map every connection follows.
 * Every connection of every process is made from this (openConnection), so every one of them
 * follows a failover by itself.
 */
export type RedisEndpoint = {
  readonly redisUrl: string;
  readonly redisSentinels?: readonly { readonly host: string; readonly port: number }[] | undefined;
  readonly redisSentinelName?: string | undefined;
  /** The Sentinels' own password (REDIS_SENTINEL_PASSWORD); the primary's is REDIS_URL's. */
  readonly redisSentinelPassword?: string | undefined;
  readonly redisClusterNodes?: readonly { readonly host: string; readonly port: number }[] | undefined;
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
  if (e.redisClusterNodes) {
    const list = e.redisClusterNodes.map((s) => `${s.host}:${s.port}`).join(',');
    return `the Redis Cluster ${list} (REDIS_CLUSTER_NODES)`;
  }
  if (e.redisSentinels && e.redisSentinelName) {
    const list = e.redisSentinels.map((s) => `${s.host}:${s.port}`).join(',');
    return `the primary "${e.redisSentinelName}" of the Sentinels ${list} (REDIS_SENTINELS)`;
  }
  return `${displayUrl(e.redisUrl)} (REDIS_URL)`;
}

/** Options of a Cluster client itself (the rest go to each node's connection, `redisOptions`). */
const CLUSTER_LEVEL = [
  'enableAutoPipelining',
  'enableOfflineQueue',
  'lazyConnect',
  'enableReadyCheck',
] as const;

function splitClusterOptions(options: RedisOptions): { top: ClusterOptions; node: RedisOptions } {
  const top: Record<string, unknown> = {};
  const node: Record<string, unknown> = { ...options };
  for (const k of CLUSTER_LEVEL) {
    if (k in node) {
      top[k] = node[k];
      delete node[k];
    }
  }
  return { top: top as ClusterOptions, node: node as RedisOptions };
}

/**
 * A command meeting a lost node is tried again every 200 ms (retryDelayOnFailover) while the cluster
 * fails over, each try one "redirection": 64 (about 13 s) for a command that should fail fast, and
 * for one that waits through a failover (a worker's, BullMQ's) about 10 minutes — a managed
 * service's failover, or a `cluster-node-timeout` of 15 s and its election, fits well inside.
 */
const FAILOVER_WAIT_REDIRECTIONS = 3_000;

/** How a Cluster client behaves when the cluster fails over (none of it applies to one Redis). */
export type ClusterTuning = {
  /** clusterRetryStrategy: how the seed nodes are tried (null gives up). */
  readonly retry?: ClusterOptions['clusterRetryStrategy'];
  /** Commands wait through a failover (workers) instead of failing after about 13 s. */
  readonly waitFailover?: boolean;
};

/**
 * A Cluster client over the seed nodes: MOVED and ASK followed, the slot map re-read on a failover
 * (a node lost, CLUSTERDOWN, TRYAGAIN) and every few seconds. REDIS_URL's user, password and TLS
 * go to every node; node addresses are used as the cluster names them (no DNS re-lookup, as
 * ElastiCache and MemoryDB with TLS need).
 */
function openCluster(e: RedisEndpoint, options: RedisOptions, cluster: ClusterTuning): Cluster {
  const u = new URL(e.redisUrl);
  const { top, node } = splitClusterOptions(options);
  return new Cluster(
    (e.redisClusterNodes ?? []).map((n) => ({ host: n.host, port: n.port })),
    {
      redisOptions: {
        ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
        ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
        ...(u.protocol === 'rediss:' ? { tls: {} } : {}),
        ...node,
      },
      dnsLookup: (address, callback) => callback(null, address),
      scaleReads: 'master',
      slotsRefreshTimeout: 2_000,
      slotsRefreshInterval: 2_000,
      retryDelayOnFailover: 200,
      retryDelayOnClusterDown: 200,
      retryDelayOnTryAgain: 200,
      maxRedirections: cluster.waitFailover ? FAILOVER_WAIT_REDIRECTIONS : 64,
      ...(cluster.retry ? { clusterRetryStrategy: cluster.retry } : {}),
      ...top,
    },
  );
}

/**
 * A connection to the endpoint. On a Redis Cluster it is ioredis's Cluster, typed as the Redis it
 * stands in for: both have the same commands (ioredis's Commander); the few things that differ —
 * `duplicate`, server commands without a key (INFO, CONFIG) — go through the functions below.
 */
export function openConnection(e: RedisEndpoint, options: RedisOptions, cluster: ClusterTuning = {}): Redis {
  if (e.redisClusterNodes) return openCluster(e, options, cluster) as unknown as Redis;
  return new Redis({ ...endpointOptions(e), ...options });
}

/** Whether `redis` is a Cluster client (REDIS_CLUSTER_NODES). */
export function isCluster(redis: Redis): boolean {
  return (redis as unknown) instanceof Cluster;
}

/** Another connection like `redis`, with `options` changed (ioredis's duplicate, either kind). */
export function duplicateConnection(redis: Redis, options: RedisOptions): Redis {
  if (!isCluster(redis)) return redis.duplicate(options);
  const cluster = redis as unknown as Cluster;
  const { top, node } = splitClusterOptions(options);
  return cluster.duplicate(undefined, {
    ...top,
    redisOptions: { ...cluster.options.redisOptions, ...node },
  }) as unknown as Redis;
}

/**
 * Every server of a Cluster (masters and replicas, as its slot map names them), or `redis` itself:
 * for the checks a server answers about itself (CONFIG GET appendonly).
 */
export function everyServer(redis: Redis): Redis[] {
  if (!isCluster(redis)) return [redis];
  return (redis as unknown as Cluster).nodes('all');
}
