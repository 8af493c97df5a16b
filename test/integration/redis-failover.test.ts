import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnCli, waitFor } from '../helpers/cli.ts';
import { checkLedger, fundOwners } from '../helpers/e2e.ts';
import { evmRows, failoverStack } from '../helpers/failover.ts';
import { solanaKeypairFile } from '../helpers/fixtures.ts';
import { startSandboxProcess, TEST_EVM_ADDRESS, type SandboxProcess } from '../helpers/sandbox.ts';
import { startReplicatedRedis } from '../../support/replicated-redis.ts';

/*
 * docs/replicated-redis.md: a failover to a replica that had not received the primary's last
 * writes. A primary and a durable replica, the project through one endpoint (a proxy), the
 * replica's link cut (or closed) while the worker pays, the primary killed, the replica promoted and
 * the endpoint moved to it. The service here does not honour Idempotency-Key (the contract allows
 * that): a payload sent twice is paid twice, so only the worker's own records can prevent it.
 * Before this project waited for the replicas, the "cut" case paid 20 of 160 rows twice.
 */

describe('replicated Redis: a failover to a replica that missed writes', () => {
  let sandbox: SandboxProcess;
  let dir: string;
  let solanaKeyFile: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'usdc-failover-'));
    solanaKeyFile = solanaKeypairFile(dir).file;
    sandbox = await startSandboxProcess({ latencyMs: 50, config: { idempotencyReplay: false } });
    await fundOwners(sandbox, [TEST_EVM_ADDRESS]);
  });
  afterAll(async () => {
    await sandbox?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const loss of ['cut', 'close'] as const) {
    const how =
      loss === 'cut'
        ? 'its link stops forwarding (the primary still counts it)'
        : 'its link closes first (the primary reports no replica)';
    it(`pays no row twice and loses none when the replica missed the last writes: ${how}`, async () => {
      const rs = await startReplicatedRedis();
      const client = new Redis(rs.url, { maxRetriesPerRequest: null });
      client.on('error', () => {});
      const s = failoverStack({
        name: loss,
        sandbox,
        dir,
        solanaKeyFile,
        client,
        redisEnv: { REDIS_URL: rs.url },
      });
      const worker = spawnCli(['worker'], s.env);
      try {
        const { batchId } = await s.enqueue(evmRows(120, loss), loss);
        if (!batchId) throw new Error('enqueue failed');
        await waitFor('20 submitted', async () => (await s.status(batchId)).counts.submitted >= 20, {
          timeoutMs: 90_000,
        });
        if (loss === 'cut') rs.link.cut();
        else rs.link.close();
        // The loss window: nothing written now reaches the replica. The worker sends nothing whose
        // mark the replica does not hold: its transfers wait, saying why.
        await waitFor('a transfer waiting for the replica', () => s.waitingForReplicas(batchId), {
          timeoutMs: 60_000,
          intervalMs: 100,
        });
        expect(await rs.lag()).toBeGreaterThan(0);
        await rs.failover();
        const doc = await s.waitComplete(batchId, worker);
        const { paidTwice, problems } = checkLedger(doc, await sandbox.admin.ledger());
        expect(paidTwice).toEqual([]);
        expect(problems.map((p) => p.slice(0, 200))).toEqual([]);
        // Every row final: paid, or left for review where the failover lost its answer.
        expect(doc.counts.submitted + doc.counts.needs_review).toBe(120);
        // The worker rode through without a restart, and said what happened.
        expect(worker.child.exitCode).toBeNull();
        expect(worker.output()).toContain('Redis failed over: a replica became the primary');
      } finally {
        await worker.stop(10_000);
        client.disconnect();
        await rs.stop();
      }
    }, 300_000);
  }
});
