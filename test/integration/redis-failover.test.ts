import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBatchReader, type BatchStatus } from '../../src/store/batch-reader.ts';
import { runCli, spawnCli, waitFor, type SpawnedProcess } from '../helpers/cli.ts';
import { checkLedger, fundOwners, jobListOf, productEnv } from '../helpers/e2e.ts';
import type { Chain } from '../../src/domain/chains.ts';
import { queueNameFor, transferJobId } from '../../src/queue/jobs.ts';
import { csvOf, randomEvmAddress, solanaKeypairFile, type Row } from '../helpers/fixtures.ts';
import { startSandboxProcess, TEST_EVM_ADDRESS, type SandboxProcess } from '../helpers/sandbox.ts';
import { startReplicatedRedis } from '../../support/replicated-redis.ts';

/*
 * README "Replicated Redis": a failover to a replica that had not received the primary's last
 * writes. The service here does not honour Idempotency-Key (the contract allows that), so a
 * payload sent twice is paid twice: only the worker's own records can prevent it.
 */

const EVM = ['ETH', 'BASE', 'ARB', 'POLYGON'] as const;

function evmRows(n: number, prefix: string): Row[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `${prefix}-${i}`,
    from: EVM[i % 4] as string,
    to: EVM[(i + 1) % 4] as string,
    amount: `${20 + (i % 40)}.${String(i % 100).padStart(2, '0')}`,
    recipient: randomEvmAddress(),
  }));
}

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

  /** A replicated Redis, the product's env on its endpoint, and a status reader through it. */
  async function setUp(name: string) {
    const rs = await startReplicatedRedis();
    const prefix = `fo${name}`;
    const env = productEnv({
      redisUrl: rs.url,
      prefix,
      sandbox,
      solanaKeyFile,
      extra: { WORKER_CONCURRENCY: '8', SERVICE_RESPONSE_TIMEOUT_MS: '2000' },
    });
    const client = new Redis(rs.url, { maxRetriesPerRequest: null });
    client.on('error', () => {});
    const reader = createBatchReader({ redis: client, prefix });
    const status = async (batchId: string): Promise<BatchStatus> => {
      const doc = await reader.status(batchId);
      if (!doc) throw new Error(`no batch ${batchId}`);
      return doc;
    };
    const enqueue = async (rows: Row[]) => {
      const file = join(dir, `${name}.csv`);
      writeFileSync(file, csvOf(rows));
      const res = await runCli(['enqueue', file, '--json'], env);
      expect(res.code, res.stderr).toBe(0);
      return (JSON.parse(res.stdout) as { batch_id: string }).batch_id;
    };
    /** The batch once complete; else what is stuck, and the worker's last output. */
    const waitComplete = async (batchId: string, worker: SpawnedProcess) => {
      try {
        return await waitFor(
          `batch ${batchId} to complete`,
          async () => {
            const d = await status(batchId);
            return d.complete ? d : undefined;
          },
          { timeoutMs: 150_000, intervalMs: 250 },
        );
      } catch (err) {
        const doc = await status(batchId);
        const stuck = doc.transfers.filter((t) => t.state === 'queued' || t.state === 'in_progress');
        const raws = await Promise.all(
          stuck.slice(0, 3).map(async (t) => {
            const queue = `${prefix}:${queueNameFor(t.from as Chain)}`;
            const jobId = transferJobId(batchId, t.id);
            return {
              record: await client.hgetall(`${prefix}:t:${batchId}:${t.id}`),
              lock: await client.pttl(`${prefix}:t:${batchId}:${t.id}:lock`),
              job: await jobListOf(client, queue, jobId),
              jobHash: await client.hmget(
                `${queue}:${jobId}`,
                'delay',
                'timestamp',
                'processedOn',
                'finishedOn',
                'atm',
                'stc',
                'failedReason',
              ),
            };
          }),
        );
        throw new Error(
          `${(err as Error).message}\ncounts ${JSON.stringify(doc.counts)}\nstuck ${JSON.stringify(raws, null, 1)}\n${worker.output().slice(-4000)}`,
        );
      }
    };
    const close = async (worker?: SpawnedProcess) => {
      await worker?.stop(10_000);
      client.disconnect();
      await rs.stop();
    };
    return { rs, env, client, status, enqueue, waitComplete, close };
  }

  it('pays no row twice when the replica missed the last writes (link cut, primary killed, replica promoted)', async () => {
    const s = await setUp('cut');
    const worker = spawnCli(['worker'], s.env);
    try {
      const batchId = await s.enqueue(evmRows(160, 'cut'));
      await waitFor('30 submitted', async () => (await s.status(batchId)).counts.submitted >= 30, {
        timeoutMs: 90_000,
      });
      const before = (await s.status(batchId)).counts.submitted;
      s.rs.link.cut();
      // The loss window: the worker goes on against the primary; what it writes never reaches
      // the replica. It ends when the worker either paid more rows or waits for the replica.
      await waitFor(
        'payments or a wait for the replica in the loss window',
        async () => {
          const doc = await s.status(batchId);
          const waiting = doc.transfers.some((t) => /Redis replicas/.test(t.wait_reason ?? ''));
          return doc.counts.submitted >= before + 20 || waiting;
        },
        { timeoutMs: 60_000, intervalMs: 100 },
      );
      expect(await s.rs.lag()).toBeGreaterThan(0);
      console.log('before failover', JSON.stringify((await s.status(batchId)).counts), await s.rs.lag());
      await s.rs.failover();
      console.log('after failover', JSON.stringify((await s.status(batchId)).counts));
      const doc = await s.waitComplete(batchId, worker);
      const { paidTwice, problems } = checkLedger(doc, await sandbox.admin.ledger());
      console.log('final', JSON.stringify(doc.counts));
      expect(paidTwice).toEqual([]);
      expect(problems.map((p) => p.slice(0, 160))).toEqual([]);
      expect(doc.counts.queued + doc.counts.in_progress).toBe(0);
      // The worker rode through without a restart.
      expect(worker.child.exitCode).toBeNull();
    } finally {
      await s.close(worker);
    }
  }, 400_000);
});
