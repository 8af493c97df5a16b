import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { Redis } from 'ioredis';
import { findRedisServer, freePort } from '../../support/redis.ts';

/**
 * A real Redis Cluster of `masters` durable masters on loopback ports, each in its own temp dir
 * (`--cluster-enabled yes`, `appendonly yes`, `appendfsync always`), joined with
 * `redis-cli --cluster create … --cluster-replicas 0`. Used by the bench and by
 * test/integration/cluster.test.ts.
 *
 * The product's clients are single-node ioredis clients; with a hash-tag `QUEUE_PREFIX` every key
 * lives in one slot, on one master, so a client pointed at that master (`ownerOf`) never meets a
 * MOVED redirection or a CROSSSLOT refusal.
 */
export type RedisClusterNode = { readonly port: number; readonly url: string; readonly dir: string };

export type RedisCluster = {
  readonly nodes: readonly RedisClusterNode[];
  /** The hash slot of `key` (`CLUSTER KEYSLOT`) and the master that serves it (`CLUSTER SLOTS`). */
  ownerOf(key: string): Promise<{ slot: number; node: RedisClusterNode }>;
  /** A plain client per node, for checks (closed by `stop`). */
  client(node: RedisClusterNode): Redis;
  /** Kills every node and removes their data. Safe to call twice. */
  stop(): Promise<void>;
};

export function findRedisCli(): string | undefined {
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, 'redis-cli'), constants.X_OK);
      return join(dir, 'redis-cli');
    } catch {
      // not here
    }
  }
  return undefined;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

async function waitFor(what: string, fn: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      if (await fn()) return;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
}

export async function startRedisCluster(options: { masters?: number } = {}): Promise<RedisCluster> {
  const server = findRedisServer();
  const cli = findRedisCli();
  if (!server || !cli) throw new Error('redis-server and redis-cli must be on PATH for a Redis Cluster');
  const masters = options.masters ?? 3;
  const nodes: RedisClusterNode[] = [];
  const children: ChildProcess[] = [];
  const clients = new Map<number, Redis>();
  let stopped = false;

  const stop = async () => {
    if (stopped) return;
    stopped = true;
    for (const c of clients.values()) c.disconnect();
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) return resolve();
            c.once('exit', () => resolve());
            c.kill('SIGKILL');
          }),
      ),
    );
    for (const n of nodes) rmSync(n.dir, { recursive: true, force: true });
  };

  const client = (node: RedisClusterNode): Redis => {
    let c = clients.get(node.port);
    if (!c) {
      c = new Redis(node.url, { maxRetriesPerRequest: 2, lazyConnect: false });
      c.on('error', () => {});
      clients.set(node.port, c);
    }
    return c;
  };

  try {
    for (let i = 0; i < masters; i++) {
      const dir = mkdtempSync(join(tmpdir(), 'usdc-cluster-'));
      const port = await freePort();
      // The cluster bus port is given explicitly: the default (port + 10000) may be taken or past 65535.
      const busPort = await freePort();
      const child = spawn(
        server,
        [
          '--port', String(port),
          '--cluster-port', String(busPort),
          '--bind', '127.0.0.1',
          '--dir', dir,
          '--cluster-enabled', 'yes',
          '--cluster-config-file', join(dir, 'nodes.conf'),
          '--cluster-node-timeout', '5000',
          '--appendonly', 'yes',
          '--appendfsync', 'always',
          '--save', '',
          '--maxmemory-policy', 'noeviction',
          '--loglevel', 'warning',
        ], // prettier-ignore
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      child.stdout?.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-2000)));
      child.stderr?.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-2000)));
      live.add(child);
      child.once('exit', () => live.delete(child));
      children.push(child);
      const node = { port, url: `redis://127.0.0.1:${port}`, dir };
      nodes.push(node);
      await waitFor(
        `redis-server (cluster node) on ${port}`,
        async () => {
          if (child.exitCode !== null) throw new Error(`exited: ${out}`);
          return (await client(node).ping()) === 'PONG';
        },
        15_000,
      );
    }

    const created = spawnSync(
      cli,
      [
        '--cluster', 'create',
        ...nodes.map((n) => `127.0.0.1:${n.port}`),
        '--cluster-replicas', '0',
        '--cluster-yes',
      ], // prettier-ignore
      { timeout: 30_000, encoding: 'utf8' },
    );
    if (created.status !== 0) {
      throw new Error(`redis-cli --cluster create failed: ${created.stdout}${created.stderr}`);
    }
    for (const n of nodes) {
      await waitFor(
        `cluster_state:ok on ${n.port}`,
        async () => {
          const text = (await client(n).call('CLUSTER', 'INFO')) as string;
          return text.includes('cluster_state:ok') && text.includes(`cluster_known_nodes:${masters}`);
        },
        30_000,
      );
    }
  } catch (err) {
    await stop();
    throw err;
  }

  return {
    nodes,
    client,
    async ownerOf(key) {
      const any = client(nodes[0] as RedisClusterNode);
      const slot = Number(await any.call('CLUSTER', 'KEYSLOT', key));
      const ranges = (await any.call('CLUSTER', 'SLOTS')) as [
        number,
        number,
        [string, number, ...unknown[]],
      ][];
      for (const [start, end, master] of ranges) {
        if (slot >= start && slot <= end) {
          const node = nodes.find((n) => n.port === Number(master[1]));
          if (node) return { slot, node };
        }
      }
      throw new Error(`no master serves slot ${slot}`);
    },
    stop,
  };
}
