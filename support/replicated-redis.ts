import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { findRedisServer, freePort, startPrivateRedis, type TestRedis } from './redis.ts';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.ts';

/**
 * Redis as production runs it, on loopback, for failover tests: a durable primary and a durable
 * replica (`--replicaof`), the replica's replication link through a proxy that can be cut (writes
 * the primary acknowledged then never reach the replica), and the clients' endpoint through a
 * proxy that can be moved to the promoted replica (a managed service's endpoint). `SIGSTOP` on the
 * replica would lose nothing on loopback (the stream waits in socket buffers): the cut link does.
 */
export type ReplicatedRedis = {
  readonly primary: TestRedis;
  readonly replica: TestRedis;
  /** The replica's link to the primary. */
  readonly link: TcpProxy;
  /** What clients connect to (`url`). */
  readonly endpoint: TcpProxy;
  readonly url: string;
  /** Resolves once the replica has everything the primary has (offsets equal). */
  inSync(timeoutMs?: number): Promise<void>;
  /** How far (bytes) the replica is behind the primary, as the primary sees its acknowledgements. */
  lag(): Promise<number>;
  /** Kills the primary (SIGKILL), promotes the replica (`REPLICAOF NO ONE`), moves the endpoint to it. */
  failover(): Promise<void>;
  stop(): Promise<void>;
};

const REPLICA_ARGS = ['--repl-diskless-sync', 'no', '--repl-timeout', '60'];

export async function startReplicatedRedis(): Promise<ReplicatedRedis> {
  const primary = await startPrivateRedis({ extraArgs: REPLICA_ARGS });
  const link = await startTcpProxy(primary.port);
  const replica = await startPrivateRedis({
    extraArgs: [...REPLICA_ARGS, '--replicaof', '127.0.0.1', String(link.port)],
  });
  const endpoint = await startTcpProxy(primary.port);
  const admin = (port: number) => {
    const r = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1, lazyConnect: true });
    r.on('error', () => {});
    return r;
  };
  const offsets = async (): Promise<{ primary: number; replica: number }> => {
    const p = admin(primary.port);
    try {
      const info = await p.info('replication');
      const own = Number(/master_repl_offset:(\d+)/.exec(info)?.[1] ?? 0);
      const acked = Number(/slave0:.*offset=(\d+)/.exec(info)?.[1] ?? -1);
      return { primary: own, replica: acked };
    } finally {
      p.disconnect();
    }
  };
  const rs: ReplicatedRedis = {
    primary,
    replica,
    link,
    endpoint,
    url: `redis://127.0.0.1:${endpoint.port}`,
    async inSync(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const o = await offsets();
        if (o.replica >= 0 && o.replica >= o.primary) return;
        if (Date.now() > deadline) throw new Error(`replica not in sync: ${JSON.stringify(o)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async lag() {
      const o = await offsets();
      return o.replica < 0 ? o.primary : o.primary - o.replica;
    },
    async failover() {
      await primary.stopProcessOnly();
      const r = admin(replica.port);
      try {
        await r.call('REPLICAOF', 'NO', 'ONE');
      } finally {
        r.disconnect();
      }
      endpoint.pointAt(replica.port);
    },
    async stop() {
      await endpoint.stop();
      await link.stop();
      await replica.stop();
      await primary.stop();
    },
  };
  await rs.inSync();
  return rs;
}

/** One Redis Sentinel watching `primaryPort` as `name` (quorum 1), for failover tests. */
export type TestSentinel = {
  readonly port: number;
  readonly name: string;
  /** The primary's address the sentinel reports now. */
  primaryPort(): Promise<number>;
  /** Resolves once the sentinel knows `n` replicas of the primary. */
  knowsReplicas(n: number, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
};

/** `password`: the Sentinel's own (`requirepass` in sentinel.conf), asked of every client. */
export async function startSentinel(
  primaryPort: number,
  name = 'usdcprimary',
  password?: string,
): Promise<TestSentinel> {
  const executable = findRedisServer();
  if (!executable) throw new Error('redis-server is not on PATH');
  const dir = mkdtempSync(join(tmpdir(), 'usdc-batch-sentinel-'));
  const port = await freePort();
  const file = join(dir, 'sentinel.conf');
  writeFileSync(
    file,
    [
      `port ${port}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `sentinel monitor ${name} 127.0.0.1 ${primaryPort} 1`,
      `sentinel down-after-milliseconds ${name} 1000`,
      // The replica replicates through the cuttable link (startReplicatedRedis), whose port is not
      // the primary's: a Sentinel "fixes" a replica that follows another address than the primary
      // it monitors (+fix-slave-config, REPLICAOF straight to the primary) once failover-timeout has
      // passed, which took the link out of the path and made a cut lose nothing on a slow machine.
      // The failover itself (one replica, its primary dead) never waits for this timeout.
      `sentinel failover-timeout ${name} 600000`,
      `sentinel parallel-syncs ${name} 1`,
      ...(password !== undefined ? [`requirepass ${password}`] : []),
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn(executable, [file, '--sentinel'], { stdio: 'ignore' });
  const client = new Redis({
    port,
    host: '127.0.0.1',
    maxRetriesPerRequest: 1,
    ...(password !== undefined ? { password } : {}),
  });
  client.on('error', () => {});
  const ask = async <T>(...args: string[]): Promise<T> => (await client.call('SENTINEL', ...args)) as T;
  const until = async (what: string, ok: () => Promise<boolean>, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (await ok().catch(() => false)) return;
      if (Date.now() > deadline) throw new Error(`sentinel: timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  await until('its first answer', async () => (await client.ping()) === 'PONG', 30_000);
  return {
    port,
    name,
    async primaryPort() {
      const addr = await ask<[string, string]>('get-master-addr-by-name', name);
      return Number(addr[1]);
    },
    async knowsReplicas(n, timeoutMs = 30_000) {
      await until(
        `${n} replicas`,
        async () => (await ask<unknown[]>('replicas', name)).length >= n,
        timeoutMs,
      );
    },
    async stop() {
      client.disconnect();
      if (child.exitCode === null && child.signalCode === null) {
        await new Promise<void>((resolve) => {
          child.once('exit', () => resolve());
          child.kill('SIGKILL');
        });
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
