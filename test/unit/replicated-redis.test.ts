import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { ConfigError } from '../../src/domain/errors.ts';
import type { Cluster } from 'ioredis';
import {
  describeEndpoint,
  duplicateConnection,
  endpointOptions,
  isCluster,
  openConnection,
} from '../../src/store/redis-endpoint.ts';
import { parseReplication, replicationChanges } from '../../src/store/primary-watch.ts';
import { describeShortfall, wantedReplicas } from '../../src/store/replica-acks.ts';
import { marksNeedNoReplica } from '../../src/worker/pipeline-wiring.ts';

/** The problems loadConfig reports for `env`, as `VARIABLE: message` lines. */
function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
    return [];
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.problems.map((p) => `${p.variable}: ${p.message}`);
  }
}

describe('replicated Redis settings (docs/replicated-redis.md)', () => {
  it('reads REDIS_SENTINELS and REDIS_SENTINEL_NAME, and keeps REDIS_URL for credentials, database and TLS', () => {
    const c = loadConfig({
      REDIS_URL: 'rediss://app:s3cret@ignored.example:6390/3',
      REDIS_SENTINELS: '10.0.0.1:26379, sentinel-b.internal:26380,[::1]:26381',
      REDIS_SENTINEL_NAME: 'usdc-primary',
    });
    expect(c.redisSentinels).toEqual([
      { host: '10.0.0.1', port: 26379 },
      { host: 'sentinel-b.internal', port: 26380 },
      { host: '::1', port: 26381 },
    ]);
    expect(endpointOptions(c)).toMatchObject({
      sentinels: c.redisSentinels,
      name: 'usdc-primary',
      username: 'app',
      password: 's3cret',
      db: 3,
      enableTLSForSentinelMode: true,
    });
    expect(endpointOptions(c)).not.toHaveProperty('host');
  });

  it('defaults to auto and 5 s, and takes a number of replicas', () => {
    const d = loadConfig({});
    expect([d.redisReplicaAcks, d.redisReplicaAckTimeoutMs, d.redisSentinels]).toEqual([
      'auto',
      5_000,
      undefined,
    ]);
    const n = loadConfig({ REDIS_REPLICA_ACKS: '2', REDIS_REPLICA_ACK_TIMEOUT_MS: '1500' });
    expect([n.redisReplicaAcks, n.redisReplicaAckTimeoutMs]).toEqual([2, 1_500]);
  });

  it('names the variable of every problem, all at once', () => {
    expect(
      problems({
        REDIS_SENTINELS: 'sentinel-a:26379,no-port,host:99999',
        REDIS_REPLICA_ACKS: 'all',
        REDIS_REPLICA_ACK_TIMEOUT_MS: '-1',
      }),
    ).toEqual([
      "REDIS_SENTINELS: entry 2 of 3 is not host:port (a Sentinel's password goes in REDIS_SENTINEL_PASSWORD)",
      "REDIS_SENTINELS: entry 3 of 3 is not host:port (a Sentinel's password goes in REDIS_SENTINEL_PASSWORD)",
      'REDIS_SENTINEL_NAME: is required with REDIS_SENTINELS: the name of the primary the Sentinels watch',
      'REDIS_REPLICA_ACKS: must be auto or a number of replicas from 0 to 99 (got "all")',
      'REDIS_REPLICA_ACK_TIMEOUT_MS: must be a whole number from 10 to 600000 (got "-1")',
    ]);
    expect(problems({ REDIS_SENTINEL_NAME: 'p' })).toEqual([
      'REDIS_SENTINELS: is required with REDIS_SENTINEL_NAME',
    ]);
    // Issue 43: an entry with a password in it was quoted whole. No message quotes a value that may hold one.
    const withSecret = problems({
      REDIS_SENTINELS: 'admin:s3cret-sentinel-pw@sentinel-a:26379',
      REDIS_SENTINEL_NAME: 'p',
      REDIS_SENTINEL_PASSWORD: 'another-s3cret',
    });
    expect(withSecret).toEqual([
      "REDIS_SENTINELS: entry 1 of 1 is not host:port (a Sentinel's password goes in REDIS_SENTINEL_PASSWORD)",
      'REDIS_SENTINELS: is required with REDIS_SENTINEL_NAME',
      'REDIS_SENTINELS: is required with REDIS_SENTINEL_PASSWORD',
    ]);
    expect(withSecret.join('\n')).not.toMatch(/s3cret/);
  });

  it('waits for the replicas the primary has had (auto), or the number set', () => {
    expect(wantedReplicas('auto', { primary: 'a', replicas: 0 })).toBe(0);
    expect(wantedReplicas('auto', { primary: 'a', replicas: 2 })).toBe(2);
    expect(wantedReplicas(1, { primary: 'a', replicas: 0 })).toBe(1);
    expect(wantedReplicas(0, { primary: 'a', replicas: 3 })).toBe(0);
    expect(describeShortfall(0, 1, 5_000)).toBe('waiting for Redis replicas: 0 of 1 acknowledged in 5 s');
    expect(describeShortfall(1, 2, 1_500)).toBe('waiting for Redis replicas: 1 of 2 acknowledged in 1500 ms');
  });
});

describe('what a process sees of replication', () => {
  const info = (id: string, previous: string, connected: number) =>
    [
      '# Replication',
      'role:master',
      `connected_slaves:${connected}`,
      `master_replid:${id}`,
      `master_replid2:${previous}`,
      'master_repl_offset:123',
    ].join('\r\n');
  const zero = '0'.repeat(40);

  it('reads role, replication ids and connected replicas from INFO replication', () => {
    expect(parseReplication(info('a'.repeat(40), zero, 1))).toEqual({
      role: 'master',
      id: 'a'.repeat(40),
      previousId: zero,
      connected: 1,
    });
  });

  it('tells a failover (a replica promoted: its previous id is the old primary) from a restart, and a replica leaving', () => {
    const before = parseReplication(info('a'.repeat(40), zero, 1));
    const promoted = parseReplication(info('b'.repeat(40), 'a'.repeat(40), 0));
    expect(replicationChanges(before, promoted)).toEqual([
      {
        level: 'warn',
        facts: { from: 'aaaaaaaaaaaa', to: 'bbbbbbbbbbbb', promoted: true },
        msg: 'Redis failed over: a replica became the primary; writes the old primary had not replicated are gone',
      },
    ]);
    const restarted = parseReplication(info('c'.repeat(40), zero, 0));
    expect(replicationChanges(before, restarted)[0]).toMatchObject({
      level: 'warn',
      facts: { promoted: false },
    });
    expect(replicationChanges(before, parseReplication(info('a'.repeat(40), zero, 0)))).toEqual([
      {
        level: 'warn',
        facts: { connected: 0, before: 1 },
        msg: 'a Redis replica disconnected: sends wait for the replicas REDIS_REPLICA_ACKS asks for',
      },
    ]);
    expect(replicationChanges(undefined, before)).toEqual([]);
    expect(replicationChanges(before, before)).toEqual([]);
  });

  it('reads REDIS_CLUSTER_NODES, and refuses a QUEUE_PREFIX that is not a hash tag, naming both settings', () => {
    const c = loadConfig({
      REDIS_URL: 'rediss://app:s3cret@ignored.example:6390',
      REDIS_CLUSTER_NODES: 'node-a.internal:6379,10.0.0.2:6380',
      QUEUE_PREFIX: '{usdc}',
    });
    expect(c.redisClusterNodes).toEqual([
      { host: 'node-a.internal', port: 6379 },
      { host: '10.0.0.2', port: 6380 },
    ]);
    expect(describeEndpoint(c)).toBe(
      'the Redis Cluster node-a.internal:6379,10.0.0.2:6380 (REDIS_CLUSTER_NODES)',
    );
    expect(problems({ REDIS_CLUSTER_NODES: 'a:6379' })).toEqual([
      'QUEUE_PREFIX: must be a hash tag such as {usdc} with REDIS_CLUSTER_NODES: every key of the project must hash to one slot of the cluster',
    ]);
    expect(problems({ REDIS_CLUSTER_NODES: 'a:6379', QUEUE_PREFIX: 'x{}' })).toHaveLength(1);
    expect(problems({ REDIS_CLUSTER_NODES: 'a:6379', QUEUE_PREFIX: 'app{usdc}' })).toEqual([]);
    expect(
      problems({
        REDIS_URL: 'redis://h:6379/2',
        REDIS_CLUSTER_NODES: 'admin:pw@a:6379',
        REDIS_SENTINELS: 's:26379',
        REDIS_SENTINEL_NAME: 'p',
        QUEUE_PREFIX: '{usdc}',
      }),
    ).toEqual(['REDIS_CLUSTER_NODES: entry 1 of 1 is not host:port (the password goes in REDIS_URL)']);
    expect(
      problems({ REDIS_URL: 'redis://h:6379/2', REDIS_CLUSTER_NODES: 'a:6379', QUEUE_PREFIX: '{usdc}' }),
    ).toEqual([
      'REDIS_URL: must not name a database with REDIS_CLUSTER_NODES: a Redis Cluster has only database 0',
    ]);
    expect(
      problems({
        REDIS_CLUSTER_NODES: 'a:6379',
        REDIS_SENTINELS: 's:26379',
        REDIS_SENTINEL_NAME: 'p',
        QUEUE_PREFIX: '{u}',
      }),
    ).toEqual([
      'REDIS_CLUSTER_NODES: and REDIS_SENTINELS cannot both be set: a Redis Cluster fails over by itself',
    ]);
  });

  it("opens a Cluster client over the seed nodes with REDIS_URL's user, password and TLS, and duplicates it as one", () => {
    const c = loadConfig({
      REDIS_URL: 'rediss://app:s3cret@ignored.example:6390',
      REDIS_CLUSTER_NODES: 'node-a.internal:6379,10.0.0.2:6380',
      QUEUE_PREFIX: '{usdc}',
    });
    const conn = openConnection(c, { lazyConnect: true, maxRetriesPerRequest: null }, { waitFailover: true });
    const dup = duplicateConnection(conn, { lazyConnect: true, maxRetriesPerRequest: 0 });
    try {
      expect(isCluster(conn)).toBe(true);
      const cluster = conn as unknown as Cluster;
      expect(cluster.options.redisOptions).toMatchObject({
        username: 'app',
        password: 's3cret',
        tls: {},
        maxRetriesPerRequest: null,
      });
      expect(cluster.options).toMatchObject({
        scaleReads: 'master',
        lazyConnect: true,
        maxRedirections: 3000,
      });
      expect(isCluster(dup)).toBe(true);
      expect((dup as unknown as Cluster).options.redisOptions).toMatchObject({
        password: 's3cret',
        maxRetriesPerRequest: 0,
      });
      const single = openConnection(loadConfig({}), { lazyConnect: true });
      expect(isCluster(single)).toBe(false);
      single.disconnect();
    } finally {
      conn.disconnect();
      dup.disconnect();
    }
  });
});

describe('an EVM hand-off woken as its commit is sent (docs/nonces.md)', () => {
  const site = (replicas: number, primary = 'a1b2') => ({ primary, replicas });
  it('only where a send’s mark needs no replica, and never while the site is unknown', () => {
    expect(marksNeedNoReplica(undefined)).toBe(true);
    expect(marksNeedNoReplica({ setting: 'auto', lastSite: () => site(0) })).toBe(true);
    expect(marksNeedNoReplica({ setting: 0, lastSite: () => site(2) })).toBe(true);
    expect(marksNeedNoReplica({ setting: 'auto', lastSite: () => site(1) })).toBe(false);
    expect(marksNeedNoReplica({ setting: 1, lastSite: () => site(0) })).toBe(false);
    expect(marksNeedNoReplica({ setting: 'auto', lastSite: () => undefined })).toBe(false);
    expect(marksNeedNoReplica({ setting: 'auto', lastSite: () => site(0, '') })).toBe(false);
  });
});
