import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  findRedisCli,
  startRedisCluster,
  type RedisCluster,
  type RedisClusterNode,
} from '../../bench/lib/redis-cluster.ts';
import { createBatchReader } from '../../src/present/batch-status.ts';
import { runCli, spawnCli, waitFor, type SpawnedProcess } from '../helpers/cli.ts';
import { checkLedger, productEnv } from '../helpers/e2e.ts';
import { csvOf, mixedRows, solanaKeypairFile } from '../helpers/fixtures.ts';
import { findRedisServer } from '../helpers/redis.ts';
import { startSandboxProcess, type SandboxProcess } from '../helpers/sandbox.ts';

/**
 * Redis Cluster (docs/configuration.md: "use a hash tag such as {usdc} on Redis Cluster"). The product's
 * clients are single-node clients: with a hash-tag prefix every key, ours and BullMQ's, hashes to one
 * slot, so REDIS_URL must name the master that owns that slot. This runs a real 3-master cluster.
 */
const haveRedis = findRedisServer() !== undefined && findRedisCli() !== undefined;
const PREFIX = '{usdc}';

describe.skipIf(!haveRedis)('Redis Cluster with a hash-tag QUEUE_PREFIX', () => {
  let cluster: RedisCluster;
  let sandbox: SandboxProcess;
  let owner: { slot: number; node: RedisClusterNode };
  let dir: string;
  let env: Record<string, string>;
  const workers: SpawnedProcess[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'usdc-cluster-test-'));
    cluster = await startRedisCluster({ masters: 3 });
    owner = await cluster.ownerOf(PREFIX);
    sandbox = await startSandboxProcess();
    const sol = solanaKeypairFile(dir);
    env = productEnv({
      redisUrl: owner.node.url,
      prefix: PREFIX,
      sandbox,
      solanaKeyFile: sol.file,
      extra: { SERVICE_RESPONSE_TIMEOUT_MS: '2000' },
    });
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop(10_000)));
    await sandbox?.stop();
    await cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('completes a 300-row mixed batch on the master owning the slot, with no CROSSSLOT or MOVED', async () => {
    const rows = mixedRows(300, 'cl');
    const file = join(dir, 'batch.csv');
    writeFileSync(file, csvOf(rows));
    const enq = await runCli(['enqueue', file, '--json'], env);
    expect(enq.stderr).not.toMatch(/CROSSSLOT|MOVED/);
    expect(enq.code).toBe(0);
    const { batch_id: batchId, accepted } = JSON.parse(enq.stdout) as { batch_id: string; accepted: number };
    expect(accepted).toBe(300);

    const worker = spawnCli(['worker'], env);
    workers.push(worker);
    const reader = createBatchReader({ redis: cluster.client(owner.node), prefix: PREFIX });
    const doc = await waitFor(
      'the batch to complete',
      async () => {
        const d = await reader.status(batchId);
        return d?.complete ? d : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 250 },
    );
    expect(doc.counts).toMatchObject({ submitted: 300, failed: 0, rejected: 0, needs_review: 0 });
    const ledger = await sandbox.admin.ledger();
    expect(ledger).toHaveLength(300);
    const { paidTwice, problems } = checkLedger(doc, ledger);
    expect(paidTwice).toEqual([]);
    expect(problems).toEqual([]);
    // Stopped first, so that no key is written between the two counts below.
    await worker.stop(10_000);
    expect(worker.output()).not.toMatch(/CROSSSLOT|MOVED/);

    // Every key of the product and of BullMQ is in the hash tag's slot, on its master; none elsewhere.
    const ownerClient = cluster.client(owner.node);
    const inSlot = Number(await ownerClient.call('CLUSTER', 'COUNTKEYSINSLOT', String(owner.slot)));
    expect(inSlot).toBeGreaterThan(300);
    expect(await ownerClient.dbsize()).toBe(inSlot);
    for (const n of cluster.nodes.filter((x) => x.port !== owner.node.port)) {
      expect(await cluster.client(n).dbsize()).toBe(0);
    }
  });

  it('refuses to enqueue through a master that does not own the slot, writing nothing', async () => {
    const other = cluster.nodes.find((n) => n.port !== owner.node.port) as RedisClusterNode;
    const file = join(dir, 'other.csv');
    writeFileSync(file, csvOf(mixedRows(5, 'wrong')));
    // Compared by name: keys with a time to live (BullMQ's stalled checks, the workers' heartbeats)
    // may expire meanwhile on a busy machine; what matters is that the refused enqueue added none.
    const before = new Set(await cluster.client(owner.node).keys('*'));
    const res = await runCli(
      ['enqueue', file, '--json'],
      { ...env, REDIS_URL: other.url },
      { timeoutMs: 30_000 },
    );
    expect(res.code).not.toBe(0);
    expect(`${res.stdout}${res.stderr}`).toMatch(/MOVED/);
    expect(await cluster.client(other).dbsize()).toBe(0);
    const added = (await cluster.client(owner.node).keys('*')).filter((k) => !before.has(k));
    expect(added).toEqual([]);
  });
});
