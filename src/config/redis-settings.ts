import { isHostName } from '../domain/host-name.ts';
import { isIP } from 'node:net';
import { DEFAULTS } from './defaults.ts';
import type { EnvReader, Problem } from './env-reader.ts';

/** One Redis Sentinel's address. */
export type SentinelAddress = { readonly host: string; readonly port: number };

/**
 * How many replicas must hold a write before money moves on it (docs/replicated-redis.md):
 * `auto` — the most replicas the current primary has reported connected since it became primary
 * (0 on a Redis that never had one) — or a fixed number.
 */
export type ReplicaAckSetting = 'auto' | number;

export type RedisSettings = {
  readonly redisSentinels: readonly SentinelAddress[] | undefined;
  readonly redisSentinelName: string | undefined;
  /** The Sentinels' own password (`requirepass` in sentinel.conf): a secret, never shown. */
  readonly redisSentinelPassword: string | undefined;
  /** `REDIS_CLUSTER_NODES`: seed nodes of a Redis Cluster (instead of REDIS_URL's host). */
  readonly redisClusterNodes: readonly SentinelAddress[] | undefined;
  readonly redisReplicaAcks: ReplicaAckSetting;
  readonly redisReplicaAckTimeoutMs: number;
};

/**
 * `REDIS_SENTINELS` (`host:port,…`) with `REDIS_SENTINEL_NAME`, `REDIS_SENTINEL_PASSWORD`,
 * `REDIS_REPLICA_ACKS` and `REDIS_REPLICA_ACK_TIMEOUT_MS`. The Sentinels replace `REDIS_URL`'s host
 * and port; its user, password, database and scheme still apply to the primary. No message quotes
 * a value that may hold a password.
 */
export function readRedisSettings(r: EnvReader, problem: Problem): RedisSettings {
  const sentinels = readAddresses(
    r,
    problem,
    'REDIS_SENTINELS',
    "a Sentinel's password goes in REDIS_SENTINEL_PASSWORD",
  );
  const clusterNodes = readAddresses(r, problem, 'REDIS_CLUSTER_NODES', 'the password goes in REDIS_URL');
  if (clusterNodes && sentinels) {
    problem(
      'REDIS_CLUSTER_NODES',
      'and REDIS_SENTINELS cannot both be set: a Redis Cluster fails over by itself',
    );
  }
  const name = r.str('REDIS_SENTINEL_NAME');
  if (sentinels && name === undefined) {
    problem(
      'REDIS_SENTINEL_NAME',
      'is required with REDIS_SENTINELS: the name of the primary the Sentinels watch',
      true,
    );
  }
  if (name !== undefined && !sentinels)
    problem('REDIS_SENTINELS', 'is required with REDIS_SENTINEL_NAME', true);
  if (name !== undefined && !/^[A-Za-z0-9_.-]{1,100}$/.test(name)) {
    problem('REDIS_SENTINEL_NAME', "must be the primary's name as the Sentinels know it ([A-Za-z0-9_.-])");
  }
  const password = r.str('REDIS_SENTINEL_PASSWORD');
  if (password !== undefined && !sentinels)
    problem('REDIS_SENTINELS', 'is required with REDIS_SENTINEL_PASSWORD', true);
  return {
    redisSentinels: sentinels,
    redisSentinelName: name,
    redisSentinelPassword: password,
    redisClusterNodes: clusterNodes,
    redisReplicaAcks: readReplicaAcks(r, problem),
    redisReplicaAckTimeoutMs: r.int(
      'REDIS_REPLICA_ACK_TIMEOUT_MS',
      DEFAULTS.REDIS_REPLICA_ACK_TIMEOUT_MS,
      10,
      600_000,
    ),
  };
}

/** `host:port,…` (REDIS_SENTINELS, REDIS_CLUSTER_NODES); an entry is named by its place, never quoted. */
function readAddresses(
  r: EnvReader,
  problem: Problem,
  variable: string,
  passwordHint: string,
): SentinelAddress[] | undefined {
  const entries = r.list(variable);
  if (entries === undefined || entries.length === 0) return undefined;
  const out: SentinelAddress[] = [];
  entries.forEach((entry, i) => {
    const m = /^(\[[0-9a-fA-F:.]+\]|[^:\s]+):([0-9]{1,5})$/.exec(entry);
    const host = m?.[1]?.replace(/^\[|\]$/g, '');
    const port = Number(m?.[2]);
    if (!m || !host || (isIP(host) === 0 && !isHostName(host)) || port < 1 || port > 65_535) {
      // Named by its place, never quoted: an entry written as user:password@host would print it.
      problem(variable, `entry ${i + 1} of ${entries.length} is not host:port (${passwordHint})`);
      return;
    }
    out.push({ host, port });
  });
  return out.length > 0 ? out : undefined;
}

function readReplicaAcks(r: EnvReader, problem: Problem): ReplicaAckSetting {
  const text = r.str('REDIS_REPLICA_ACKS')?.toLowerCase() ?? DEFAULTS.REDIS_REPLICA_ACKS;
  if (text === 'auto') return 'auto';
  if (/^[0-9]{1,2}$/.test(text)) return Number(text);
  problem(
    'REDIS_REPLICA_ACKS',
    `must be auto or a number of replicas from 0 to 99 (got "${text.slice(0, 20)}")`,
  );
  return 'auto';
}
