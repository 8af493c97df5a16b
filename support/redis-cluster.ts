import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { Redis } from 'ioredis';
import { findRedisServer, freePort } from './redis.ts';

/**
 * A real Redis Cluster of `masters` durable masters (and `replicas` replicas of each) on loopback
 * ports, each node in its own temp dir (`--cluster-enabled yes`, `appendonly yes`, `appendfsync
 * always`), joined with `redis-cli --cluster create … --cluster-replicas N`. Used by the bench and
 * by test/integration/cluster.test.ts.
 *
 * With a hash-tag `QUEUE_PREFIX` every key lives in one slot, on one master (`ownerOf`); the
 * product reaches it through REDIS_CLUSTER_NODES (`seeds`), or a single-node client pointed at
 * that master. A node can be killed (`kill -9`) and started again on its data (`restart`): it
 * rejoins the cluster, as a replica when its slots moved meanwhile.
 */
export type RedisClusterNode = { readonly port: number; readonly url: string; readonly dir: string };

export type RedisCluster = {
  readonly nodes: readonly RedisClusterNode[];
  /** The hash slot of `key` (`CLUSTER KEYSLOT`) and the master that serves it (`CLUSTER SLOTS`). */
  ownerOf(key: string): Promise<{ slot: number; node: RedisClusterNode }>;
  /** A plain client per node, for checks (closed by `stop`). */
  client(node: RedisClusterNode): Redis;
  /** `host:port,…` of every node: REDIS_CLUSTER_NODES. */
  readonly seeds: string;
  /** The replicas of `master` (as `CLUSTER REPLICAS` names them). */
  replicasOf(master: RedisClusterNode): Promise<RedisClusterNode[]>;
  /** SIGKILL: the node is gone at once, as in a crash. */
  kill(node: RedisClusterNode): Promise<void>;
  /** Starts a killed node again on its data dir and nodes.conf; resolves once it answers PING. */
  restart(node: RedisClusterNode): Promise<void>;
  /** Until every live node says cluster_state:ok and every master has its replicas in sync. */
  waitHealthy(timeoutMs?: number): Promise<void>;
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

type Options = { masters?: number; replicas?: number; nodeTimeoutMs?: number };

function nodeArgs(node: RedisClusterNode, busPort: number, nodeTimeoutMs: number): string[] {
  return [
    '--port', String(node.port),
    '--cluster-port', String(busPort),
    '--bind', '127.0.0.1',
    '--dir', node.dir,
    '--cluster-enabled', 'yes',
    '--cluster-config-file', join(node.dir, 'nodes.conf'),
    '--cluster-node-timeout', String(nodeTimeoutMs),
    '--appendonly', 'yes',
    '--appendfsync', 'always',
    '--save', '',
    '--maxmemory-policy', 'noeviction',
    '--loglevel', 'warning',
  ]; // prettier-ignore
}

type Parsed = { id: string; port: number; flags: string; masterId: string; connected: boolean };

/** `CLUSTER NODES`, one entry a node. */
function parseClusterNodes(text: string): Parsed[] {
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const [id = '', addr = '', flags = '', masterId = '', , , , link = ''] = line.split(' ');
      return {
        id,
        port: Number(/:(\d+)@/.exec(addr)?.[1]),
        flags,
        masterId,
        connected: link === 'connected',
      };
    });
}

export async function startRedisCluster(options: Options = {}): Promise<RedisCluster> {
  const server = findRedisServer();
  const cli = findRedisCli();
  if (!server || !cli) throw new Error('redis-server and redis-cli must be on PATH for a Redis Cluster');
  const masters = options.masters ?? 3;
  const replicas = options.replicas ?? 0;
  const nodeTimeoutMs = options.nodeTimeoutMs ?? 5_000;
  const total = masters * (1 + replicas);
  const nodes: RedisClusterNode[] = [];
  const buses = new Map<number, number>();
  const children = new Map<number, ChildProcess>();
  const clients = new Map<number, Redis>();
  let stopped = false;

  const client = (node: RedisClusterNode): Redis => {
    let c = clients.get(node.port);
    if (!c) {
      c = new Redis(node.url, { maxRetriesPerRequest: 2, lazyConnect: false });
      c.on('error', () => {});
      clients.set(node.port, c);
    }
    return c;
  };

  const spawnNode = async (node: RedisClusterNode) => {
    const child = spawn(server, nodeArgs(node, buses.get(node.port) as number, nodeTimeoutMs), {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout?.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-2000)));
    child.stderr?.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-2000)));
    live.add(child);
    child.once('exit', () => live.delete(child));
    children.set(node.port, child);
    await waitFor(
      `redis-server (cluster node) on ${node.port}`,
      async () => {
        if (child.exitCode !== null) throw new Error(`exited: ${out}`);
        return (await client(node).ping()) === 'PONG';
      },
      15_000,
    );
  };

  const kill = async (node: RedisClusterNode) => {
    const c = children.get(node.port);
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      c.once('exit', () => resolve());
      c.kill('SIGKILL');
    });
  };

  const alive = () =>
    nodes.filter((n) => {
      const c = children.get(n.port);
      return c !== undefined && c.exitCode === null && c.signalCode === null;
    });

  const stop = async () => {
    if (stopped) return;
    stopped = true;
    for (const c of clients.values()) c.disconnect();
    await Promise.all(nodes.map((n) => kill(n)));
    for (const n of nodes) rmSync(n.dir, { recursive: true, force: true });
  };

  const view = async (): Promise<Parsed[]> => {
    const from = alive()[0];
    if (!from) throw new Error('no node of the cluster is running');
    return parseClusterNodes((await client(from).call('CLUSTER', 'NODES')) as string);
  };

  const waitHealthy = async (timeoutMs = 30_000) => {
    await waitFor(
      'the cluster to be healthy (every live node cluster_state:ok, every master its replicas in sync)',
      async () => {
        for (const n of alive()) {
          const text = (await client(n).call('CLUSTER', 'INFO')) as string;
          if (!text.includes('cluster_state:ok') || !text.includes(`cluster_known_nodes:${total}`))
            return false;
          const parsed = parseClusterNodes((await client(n).call('CLUSTER', 'NODES')) as string);
          if (parsed.some((p) => !p.connected || /fail/.test(p.flags))) return false;
          const info = await client(n).info('replication');
          if (/role:slave/.test(info) && !/master_link_status:up/.test(info)) return false;
          if (/role:master/.test(info) && alive().length === total) {
            const want = parsed.filter(
              (p) => p.masterId === parsed.find((q) => q.port === n.port)?.id,
            ).length;
            if (Number(/connected_slaves:(\d+)/.exec(info)?.[1] ?? 0) < want) return false;
          }
        }
        return true;
      },
      timeoutMs,
    );
  };

  try {
    for (let i = 0; i < total; i++) {
      const dir = mkdtempSync(join(tmpdir(), 'usdc-cluster-'));
      const port = await freePort();
      // The cluster bus port is given explicitly: the default (port + 10000) may be taken or past 65535.
      buses.set(port, await freePort());
      const node = { port, url: `redis://127.0.0.1:${port}`, dir };
      nodes.push(node);
      await spawnNode(node);
    }
    const created = spawnSync(
      cli,
      [
        '--cluster', 'create',
        ...nodes.map((n) => `127.0.0.1:${n.port}`),
        '--cluster-replicas', String(replicas),
        '--cluster-yes',
      ], // prettier-ignore
      { timeout: 30_000, encoding: 'utf8' },
    );
    if (created.status !== 0) {
      throw new Error(`redis-cli --cluster create failed: ${created.stdout}${created.stderr}`);
    }
    await waitHealthy();
  } catch (err) {
    await stop();
    throw err;
  }

  const byPort = (port: number) => nodes.find((n) => n.port === port);
  return {
    nodes,
    client,
    seeds: nodes.map((n) => `127.0.0.1:${n.port}`).join(','),
    async ownerOf(key) {
      const any = client(alive()[0] as RedisClusterNode);
      const slot = Number(await any.call('CLUSTER', 'KEYSLOT', key));
      const ranges = (await any.call('CLUSTER', 'SLOTS')) as [
        number,
        number,
        [string, number, ...unknown[]],
      ][];
      for (const [start, end, master] of ranges) {
        if (slot >= start && slot <= end) {
          const node = byPort(Number(master[1]));
          if (node) return { slot, node };
        }
      }
      throw new Error(`no master serves slot ${slot}`);
    },
    async replicasOf(master) {
      const parsed = await view();
      const id = parsed.find((p) => p.port === master.port)?.id;
      return parsed
        .filter((p) => p.masterId === id)
        .map((p) => byPort(p.port))
        .filter((n): n is RedisClusterNode => n !== undefined);
    },
    kill,
    async restart(node) {
      await kill(node);
      await spawnNode(node);
    },
    waitHealthy,
    stop,
  };
}
