import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/log/logger.ts';
import { buildApp } from '../../src/http/app.ts';
import { createProducer } from '../../src/queue/producer.ts';
import { createReplicaAcks } from '../../src/store/replica-acks.ts';
import { runCli, spawnCli, waitFor } from '../helpers/cli.ts';
import { checkLedger, fundOwners } from '../helpers/e2e.ts';
import { evmRows, failoverStack } from '../helpers/failover.ts';
import { csvOf, solanaKeypairFile } from '../helpers/fixtures.ts';
import { startPrivateRedis } from '../helpers/redis.ts';
import { startSandboxProcess, TEST_EVM_ADDRESS, type SandboxProcess } from '../helpers/sandbox.ts';
import { startReplicatedRedis, startSentinel } from '../../support/replicated-redis.ts';

/*
 * docs/replicated-redis.md, the other half: a real Sentinel doing the promotion; operator actions
 * acknowledged only once the replicas hold them; and a standalone Redis that pays nothing for any
 * of it.
 */

describe('replicated Redis: Sentinel, acknowledged actions, standalone', () => {
  let sandbox: SandboxProcess;
  let dir: string;
  let solanaKeyFile: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'usdc-replica-acks-'));
    solanaKeyFile = solanaKeypairFile(dir).file;
    sandbox = await startSandboxProcess({ latencyMs: 50, config: { idempotencyReplay: false } });
    await fundOwners(sandbox, [TEST_EVM_ADDRESS]);
  });
  afterAll(async () => {
    await sandbox?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('uses Sentinels with a password of their own (REDIS_SENTINEL_PASSWORD); no error shows a password', async () => {
    // Issue 43: such Sentinels could not be used, and a REDIS_SENTINELS error echoed the entry whole.
    const primary = await startPrivateRedis();
    const password = 'sentinel-own-pw-0123456789';
    const sentinel = await startSentinel(primary.port, 'pwprimary', password);
    try {
      const env = {
        REDIS_SENTINELS: `127.0.0.1:${sentinel.port}`,
        REDIS_SENTINEL_NAME: 'pwprimary',
        QUEUE_PREFIX: 'sentinelpw',
      };
      const ok = await runCli(['batches', '--json'], { ...env, REDIS_SENTINEL_PASSWORD: password });
      expect(ok.code, ok.stderr).toBe(0);
      expect(JSON.parse(ok.stdout)).toMatchObject({ batches: [] });
      for (const extra of [
        {},
        { REDIS_SENTINEL_PASSWORD: 'wrong-sentinel-pw-98765' },
        { REDIS_SENTINELS: `:${password}@127.0.0.1:${sentinel.port}`, REDIS_SENTINEL_PASSWORD: password },
      ]) {
        const res = await runCli(['batches'], { ...env, ...extra }, { timeoutMs: 60_000 });
        expect(res.code, JSON.stringify(extra)).toBe(2);
        expect(`${res.stdout}${res.stderr}`).not.toMatch(/sentinel-own-pw|wrong-sentinel-pw/);
      }
    } finally {
      await sentinel.stop();
      await primary.stop();
    }
  });

  it('follows a failover a Sentinel makes (REDIS_SENTINELS): no row paid twice, none lost, no restart', async () => {
    const rs = await startReplicatedRedis();
    const sentinel = await startSentinel(rs.primary.port);
    await sentinel.knowsReplicas(1);
    const sentinels = [{ host: '127.0.0.1', port: sentinel.port }];
    const client = new Redis({ sentinels, name: sentinel.name, maxRetriesPerRequest: null });
    client.on('error', () => {});
    const s = failoverStack({
      name: 'sentinel',
      sandbox,
      dir,
      solanaKeyFile,
      client,
      redisEnv: { REDIS_SENTINELS: `127.0.0.1:${sentinel.port}`, REDIS_SENTINEL_NAME: sentinel.name },
    });
    const worker = spawnCli(['worker'], s.env);
    try {
      const { batchId, stderr } = await s.enqueue(evmRows(100, 'sen'), 'sentinel');
      if (!batchId) throw new Error(`enqueue through the Sentinel failed: ${stderr}`);
      await waitFor('20 submitted', async () => (await s.status(batchId)).counts.submitted >= 20, {
        timeoutMs: 90_000,
      });
      rs.link.cut();
      await waitFor('a transfer waiting for the replica', () => s.waitingForReplicas(batchId), {
        timeoutMs: 60_000,
        intervalMs: 100,
      });
      // The primary dies; the Sentinel sees it down and promotes the replica by itself.
      await rs.primary.stopProcessOnly();
      await waitFor(
        'the Sentinel to promote the replica',
        async () => (await sentinel.primaryPort().catch(() => 0)) === rs.replica.port,
        { timeoutMs: 60_000, intervalMs: 200 },
      );
      const doc = await s.waitComplete(batchId, worker);
      const { paidTwice, problems } = checkLedger(doc, await sandbox.admin.ledger());
      expect(paidTwice).toEqual([]);
      expect(problems.map((p) => p.slice(0, 200))).toEqual([]);
      expect(doc.counts.submitted + doc.counts.needs_review).toBe(100);
      expect(worker.child.exitCode).toBeNull();
      expect(worker.output()).toContain('Redis failed over: a replica became the primary');
    } finally {
      await worker.stop(10_000);
      client.disconnect();
      await sentinel.stop();
      await rs.stop();
    }
  }, 300_000);

  it('acknowledges an enqueue only once the replica holds it: refused while the replica is cut off, whole after a failover once acknowledged', async () => {
    const rs = await startReplicatedRedis();
    const client = new Redis(rs.url, { maxRetriesPerRequest: null });
    client.on('error', () => {});
    const s = failoverStack({
      name: 'ack',
      sandbox,
      dir,
      solanaKeyFile,
      client,
      redisEnv: { REDIS_URL: rs.url },
    });
    try {
      // Cut off: the CLI says it is not acknowledged (exit 2), and HTTP answers 503 — never success.
      rs.link.cut();
      const refused = await s.enqueue(evmRows(10, 'cutoff'), 'cutoff');
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(
        'not acknowledged: waiting for Redis replicas: 0 of 1 acknowledged in 1 s; the change may be lost in a failover',
      );
      const HOOK = 'hook-token-for-this-test-0123456789';
      const config = loadConfig({ ...s.env, HOOK_TOKEN: HOOK });
      const producer = createProducer({ connection: client, prefix: s.prefix });
      const acks = createReplicaAcks({ redis: client, prefix: s.prefix, setting: 'auto', timeoutMs: 1_000 });
      const app = await buildApp({ config, redis: client, producer, acks, logger: createLogger('silent') });
      try {
        const res = await app.inject({
          method: 'POST',
          url: '/v1/batches',
          headers: {
            authorization: `Bearer ${HOOK}`,
            'content-type': 'text/csv',
          },
          payload: csvOf(evmRows(3, 'httpcut')),
        });
        expect(res.statusCode).toBe(503);
        expect(res.json()).toMatchObject({ code: 'USDC_REDIS_NOT_REPLICATED' });
      } finally {
        await app.close();
        await acks.close();
        await producer.close();
      }

      // Mended (a new link, a full resync): an acknowledged enqueue survives a failover right after.
      rs.link.mend();
      await rs.inSync();
      const rows = evmRows(40, 'acked');
      const acked = await s.enqueue(rows, 'acked');
      expect(acked.code, acked.stderr).toBe(0);
      await rs.failover();
      const doc = await s.status(acked.batchId as string);
      expect(doc.counts.queued).toBe(40);
      const worker = spawnCli(['worker'], s.env);
      try {
        const done = await s.waitComplete(doc.batch_id, worker);
        expect(done.counts.submitted).toBe(40);
        expect(checkLedger(done, await sandbox.admin.ledger()).paidTwice).toEqual([]);
      } finally {
        await worker.stop(10_000);
      }
    } finally {
      client.disconnect();
      await rs.stop();
    }
  }, 300_000);

  it('makes no WAIT call on a standalone Redis, and REDIS_REPLICA_ACKS=1 there holds every send with the reason', async () => {
    const redis = await startPrivateRedis();
    const client = new Redis(redis.url, { maxRetriesPerRequest: null });
    client.on('error', () => {});
    const plain = failoverStack({
      name: 'alone',
      sandbox,
      dir,
      solanaKeyFile,
      client,
      redisEnv: { REDIS_URL: redis.url },
    });
    const strict = failoverStack({
      name: 'strict',
      sandbox,
      dir,
      solanaKeyFile,
      client,
      redisEnv: { REDIS_URL: redis.url },
      extra: { REDIS_REPLICA_ACKS: '1' },
    });
    const worker = spawnCli(['worker'], plain.env);
    const strictWorker = spawnCli(['worker'], strict.env);
    try {
      const { batchId } = await plain.enqueue(evmRows(8, 'alone'), 'alone');
      const doc = await plain.waitComplete(batchId as string, worker);
      expect(doc.counts.submitted).toBe(8);
      expect(await client.info('commandstats')).not.toMatch(/^cmdstat_wait:/m);

      // Asked for a replica Redis does not have, an enqueue is not acknowledged (exit 2) — though
      // its rows were written (the answer, not the write, is what waits for replicas)…
      const rows = evmRows(2, 'strict');
      const refused = await strict.enqueue(rows, 'strict');
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('waiting for Redis replicas: 0 of 1 acknowledged in 1 s');
      // …and the worker sends none of them: each waits, saying why.
      const [strictBatch] = await client.zrange(`${strict.prefix}:batches`, 0, -1);
      await waitFor(
        'the transfers to wait for a replica',
        () => strict.waitingForReplicas(strictBatch as string),
        {
          timeoutMs: 60_000,
          intervalMs: 100,
        },
      );
      const recipients = new Set(rows.map((r) => r.recipient.toLowerCase()));
      expect((await sandbox.admin.ledger()).filter((e) => recipients.has(e.recipient.toLowerCase()))).toEqual(
        [],
      );
      expect((await strict.status(strictBatch as string)).counts.submitted).toBe(0);
    } finally {
      await worker.stop(10_000);
      await strictWorker.stop(10_000);
      client.disconnect();
      await redis.stop();
    }
  }, 300_000);
});
