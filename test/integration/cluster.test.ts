import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, type Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  findRedisCli,
  startRedisCluster,
  type RedisCluster,
  type RedisClusterNode,
} from '../helpers/redis-cluster.ts';
import { runCli, spawnCli, waitFor, type SpawnedProcess } from '../helpers/cli.ts';
import { checkLedger, fundOwners, productEnv } from '../helpers/e2e.ts';
import { evmRows, failoverStack, type FailoverStack } from '../helpers/failover.ts';
import { csvOf, mixedRows, solanaKeypairFile } from '../helpers/fixtures.ts';
import { findRedisServer } from '../helpers/redis.ts';
import { startSandboxProcess, TEST_EVM_ADDRESS, type SandboxProcess } from '../helpers/sandbox.ts';
import { startServe } from '../helpers/serve.ts';

/*
 * Redis Cluster (docs/scaling.md "Redis deployments"): REDIS_CLUSTER_NODES makes every connection
 * of every process a cluster connection, with a hash-tag QUEUE_PREFIX putting every key in one
 * slot. One real cluster for every case: three durable masters, a replica each, a node timeout of
 * 2 s, so that the cluster promotes a replica by itself when its master dies. The service here does
 * not honour Idempotency-Key: a payload sent twice would be paid twice, so only the worker's own
 * records prevent it.
 */
const haveRedis = findRedisServer() !== undefined && findRedisCli() !== undefined;
const PREFIX = '{usdcl}';
const HOOK = 'hook-token-for-the-cluster-test-0123456789';

describe.skipIf(!haveRedis)('Redis Cluster (REDIS_CLUSTER_NODES, QUEUE_PREFIX a hash tag)', () => {
  let cluster: RedisCluster;
  let sandbox: SandboxProcess;
  let dir: string;
  let client: Redis;
  let stack: FailoverStack;
  const workers: SpawnedProcess[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'usdc-cluster-test-'));
    [cluster, sandbox] = await Promise.all([
      startRedisCluster({ masters: 3, replicas: 1, nodeTimeoutMs: 2_000 }),
      startSandboxProcess({ latencyMs: 50, config: { idempotencyReplay: false } }),
    ]);
    await fundOwners(sandbox, [TEST_EVM_ADDRESS]);
    // The test's own reader follows the cluster too: it must find the batch on the promoted replica.
    const own = new Cluster(
      cluster.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
      { redisOptions: { maxRetriesPerRequest: null }, retryDelayOnFailover: 200, maxRedirections: 64 },
    );
    own.on('error', () => {});
    client = own as unknown as Redis;
    stack = failoverStack({
      name: 'cluster',
      prefix: PREFIX,
      sandbox,
      dir,
      solanaKeyFile: solanaKeypairFile(dir).file,
      client,
      // REDIS_URL's host is not used with REDIS_CLUSTER_NODES: a port nobody listens on, never 6379.
      redisEnv: { REDIS_URL: 'redis://127.0.0.1:1', REDIS_CLUSTER_NODES: cluster.seeds },
    });
  }, 120_000);

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop(10_000)));
    client?.disconnect();
    await sandbox?.stop();
    await cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Waits until a master other than `before` owns the prefix's slot: the cluster failed over. */
  async function promoted(before: RedisClusterNode): Promise<RedisClusterNode> {
    return await waitFor(
      'a replica to be promoted for the slot',
      async () => {
        const now = await cluster.ownerOf(PREFIX).catch(() => undefined);
        return now && now.node.port !== before.port ? now.node : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
  }

  /** Every row final, none paid twice, the worker alive and saying the primary changed. */
  async function expectWhole(batchId: string, rows: number, worker: SpawnedProcess): Promise<void> {
    const doc = await stack.waitComplete(batchId, worker);
    const { paidTwice, problems } = checkLedger(doc, await sandbox.admin.ledger());
    expect(paidTwice).toEqual([]);
    expect(problems.map((p) => p.slice(0, 200))).toEqual([]);
    expect(doc.counts.submitted + doc.counts.needs_review).toBe(rows);
    expect(worker.child.exitCode).toBeNull();
    expect(worker.output()).toContain('Redis failed over: a replica became the primary');
    expect(worker.output()).not.toMatch(/CROSSSLOT/);
  }

  it('refuses to start with a QUEUE_PREFIX that is not a hash tag, naming both settings (exit 2)', async () => {
    const res = await runCli(['status', 'nothing'], { ...stack.env, QUEUE_PREFIX: 'usdc' });
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/QUEUE_PREFIX.*hash tag.*REDIS_CLUSTER_NODES/);
  });

  it("rides through the slot's master killed -9 mid-batch, the cluster promoting its replica: no row paid twice, every row final, /readyz 503 meanwhile", async () => {
    const owner = (await cluster.ownerOf(PREFIX)).node;
    const worker = spawnCli(['worker'], stack.env);
    workers.push(worker);
    const serve = await startServe({ ...stack.env, HOOK_TOKEN: HOOK });
    const ready = async () => (await serve.call('/readyz', { token: HOOK })).status;
    try {
      expect(await ready()).toBe(200);
      const { batchId, stderr } = await stack.enqueue(evmRows(100, 'kill'), 'kill');
      if (!batchId) throw new Error(`enqueue failed: ${stderr}`);
      await waitFor('20 submitted', async () => (await stack.status(batchId)).counts.submitted >= 20, {
        timeoutMs: 90_000,
      });
      await cluster.kill(owner);
      // No master answers for the slot until the cluster promotes the replica: not ready meanwhile.
      await waitFor('/readyz 503 while the slot has no master', async () => (await ready()) === 503, {
        timeoutMs: 30_000,
        intervalMs: 100,
      });
      await promoted(owner);
      await waitFor('/readyz 200 on the promoted master', async () => (await ready()) === 200, {
        timeoutMs: 30_000,
      });
      await expectWhole(batchId, 100, worker);
    } finally {
      await serve.stop();
    }
    // The killed master comes back as the replica of the promoted one.
    await cluster.restart(owner);
    await cluster.waitHealthy();
    await worker.stop(10_000);
  }, 240_000);

  it('keeps an enqueue acknowledged just before its master is killed, and rides through a graceful CLUSTER FAILOVER', async () => {
    const owner = (await cluster.ownerOf(PREFIX)).node;
    // Acknowledged: the replicas hold it (docs/replicated-redis.md). The master dies right after.
    const { batchId, stderr } = await stack.enqueue(evmRows(80, 'ack'), 'ack');
    if (!batchId) throw new Error(`enqueue failed: ${stderr}`);
    await cluster.kill(owner);
    const next = await promoted(owner);
    const before = await stack.status(batchId);
    expect(before.transfers).toHaveLength(80);

    await cluster.restart(owner);
    await cluster.waitHealthy();
    const worker = spawnCli(['worker'], stack.env);
    workers.push(worker);
    await waitFor('20 submitted', async () => (await stack.status(batchId)).counts.submitted >= 20, {
      timeoutMs: 90_000,
    });
    // A planned failover: the replica takes over once it has everything its master wrote.
    const [replica] = await cluster.replicasOf(next);
    if (!replica) throw new Error('the promoted master has no replica');
    await cluster.client(replica).call('CLUSTER', 'FAILOVER');
    await promoted(next);
    await expectWhole(batchId, 80, worker);
    await worker.stop(10_000);

    // Every key of the product and of BullMQ is in the prefix's slot: nothing on the other masters.
    const now = await cluster.ownerOf(PREFIX);
    const holders = new Set([now.node.port, ...(await cluster.replicasOf(now.node)).map((n) => n.port)]);
    const ownerClient = cluster.client(now.node);
    const inSlot = Number(await ownerClient.call('CLUSTER', 'COUNTKEYSINSLOT', String(now.slot)));
    expect(inSlot).toBeGreaterThan(180);
    expect(await ownerClient.dbsize()).toBe(inSlot);
    for (const n of cluster.nodes.filter((x) => !holders.has(x.port))) {
      expect(await cluster.client(n).dbsize()).toBe(0);
    }
  }, 240_000);

  it('refuses to enqueue through a single-node REDIS_URL at a master that does not own the slot', async () => {
    const now = await cluster.ownerOf(PREFIX);
    const holders = new Set([now.node.port, ...(await cluster.replicasOf(now.node)).map((n) => n.port)]);
    const other = cluster.nodes.find((n) => !holders.has(n.port)) as RedisClusterNode;
    const file = join(dir, 'other.csv');
    writeFileSync(file, csvOf(mixedRows(5, 'wrong')));
    const env = productEnv({
      redisUrl: other.url,
      prefix: PREFIX,
      sandbox,
      solanaKeyFile: solanaKeypairFile(dir).file,
    });
    const res = await runCli(['enqueue', file, '--json'], env, { timeoutMs: 30_000 });
    expect(res.code).not.toBe(0);
    expect(`${res.stdout}${res.stderr}`).toMatch(/MOVED/);
    expect(await cluster.client(other).dbsize()).toBe(0);
  });
});
