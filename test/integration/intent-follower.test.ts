import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/log/logger.ts';
import { createWorkerMetrics } from '../../src/metrics/worker-metrics.ts';
import type { FollowTiming } from '../../src/queue/follow-intent.ts';
import { createIntentFollower, type IntentFollower } from '../../src/queue/intent-follower.ts';
import { createSandbox, type Sandbox } from '../../src/sandbox/sandbox.ts';
import { createServiceClient } from '../../src/service/service-client.ts';
import type { ServiceClient } from '../../src/service/types.ts';
import { addFollowedIntent, followsIntent } from '../../src/store/intent-follows.ts';
import { createTransferStore } from '../../src/store/transfer-store.ts';
import { waitFor } from '../helpers/cli.ts';
import { randomEvmAddress } from '../helpers/fixtures.ts';
import { readJob } from '../helpers/job-hashes.ts';
import { startPrivateRedis, type TestRedis } from '../helpers/redis.ts';
import { signTestPermit, TEST_EVM_ADDRESS } from '../helpers/sandbox.ts';

/** Short waits for a test: the first poll 100 ms after submit, then every 100 ms. */
const TIMING: Partial<FollowTiming> = {
  firstPollMs: 100,
  nextPollMs: () => 100,
  tickMs: 50,
  resultWaitMs: 500,
};

/**
 * Intent following against the sandbox's status route (pending → detected → minted → complete):
 * the follow set `P:follow`, claimed by each worker process's loop, and the `intents` queue's
 * failed jobs for intents that ended failed after submit.
 */
describe('intent follower', () => {
  let redis: TestRedis;
  let client: Redis;
  let sandbox: Sandbox;
  let service: ServiceClient & { close(): void };
  let follower: IntentFollower;
  let metrics: ReturnType<typeof createWorkerMetrics>;
  let nonce = 0n;
  const prefix = 'follow';
  const logger = createLogger('silent');

  beforeAll(async () => {
    redis = await startPrivateRedis();
    client = new Redis(redis.url);
    sandbox = await createSandbox({ port: 0, statusStepMs: 150 });
    const config = loadConfig({ TRANSFER_API_URL: sandbox.url, TRANSFER_API_KEY: sandbox.apiKey });
    service = createServiceClient({ baseUrl: sandbox.url, apiKey: config.transferApiKey! });
    metrics = createWorkerMetrics({ redis: client, prefix, logger, flushMs: 50 });
    follower = startFollower(prefix, client, service);
  });
  afterAll(async () => {
    await follower?.close();
    await metrics?.close();
    service?.close();
    client?.disconnect();
    await sandbox?.close();
    await redis?.stop();
  });

  function startFollower(p: string, c: Redis, s: ServiceClient): IntentFollower {
    return createIntentFollower({
      endpoint: { redisUrl: redis.url },
      prefix: p,
      service: s,
      store: createTransferStore({ redis: c, prefix: p }),
      logger,
      redis: c,
      metrics,
      timing: TIMING,
    });
  }

  /** A real accepted transfer in the sandbox, recorded as a submitted transfer in Redis. */
  async function submittedTransfer(id: string, p = prefix): Promise<string> {
    const permit = await signTestPermit({
      chain: 'BASE',
      spender: sandbox.spender,
      value: 2_000_000n,
      nonce: nonce++,
    });
    const res = await fetch(`${sandbox.url}/sdk/v1/transfer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': sandbox.apiKey },
      body: JSON.stringify({
        from: 'BASE',
        to: 'ETH',
        amount: '2.00',
        recipient: randomEvmAddress(),
        permit,
      }),
    });
    const body = (await res.json()) as { intent_id: string };
    expect(res.status).toBe(200);
    await client.hset(`${p}:t:b:${id}`, {
      id,
      from: 'BASE',
      to: 'ETH',
      amount: '2000000',
      recipient: TEST_EVM_ADDRESS,
      state: 'submitted',
      intent_id: body.intent_id,
      intent_status: 'pending',
    });
    return body.intent_id;
  }

  const followed = async (p = prefix) => await client.zrange(`${p}:follow`, 0, -1);
  const recordOf = async (id: string) => await client.hgetall(`${prefix}:t:b:${id}`);

  it('follows a submitted intent until complete, records it, and stops following it', async () => {
    const intent = await submittedTransfer('t1');
    await follower.follow('b', 't1', intent);
    const [member] = await followed();
    expect(member).toMatch(new RegExp(`^b/t1/${intent}@\\d+$`));
    await waitFor(
      'intent_status complete',
      async () => (await recordOf('t1'))['intent_status'] === 'complete',
      {
        timeoutMs: 15_000,
      },
    );
    expect(await client.hget(`${prefix}:batch:b`, 'intents_complete')).toBe('1');
    await waitFor('the intent to leave the follow set', async () => (await followed()).length === 0, {
      timeoutMs: 15_000,
    });
    // A complete intent leaves no job behind: only a failed one gets one.
    expect(await client.keys(`${prefix}:intents:b/*`)).toEqual([]);
  });

  it("finds an intent's member whatever its submission time, among thousands, and no other (Redis's glob characters in ids match themselves)", async () => {
    const p = 'again';
    const at = (t: { batchId: string; transferId: string; intentId: string }, ms: number) =>
      addFollowedIntent(client, p, { ...t, submittedAt: ms }, ms);
    for (let i = 0; i < 3000; i++) await at({ batchId: 'b', transferId: `n${i}`, intentId: `i${i}` }, i);
    await at({ batchId: 'b', transferId: 't1', intentId: 'cctp:0:0xab' }, 1_700_000_000_123);
    await at({ batchId: 'b', transferId: 't[1]', intentId: 'x*?\\' }, 5);
    const follows = (transferId: string, intentId: string) =>
      followsIntent(client, p, { batchId: 'b', transferId, intentId });
    expect(await follows('t1', 'cctp:0:0xab')).toBe(true);
    expect(await follows('n2999', 'i2999')).toBe(true);
    expect(await follows('t[1]', 'x*?\\')).toBe(true);
    expect(await follows('t1', 'cctp:0:0xac')).toBe(false);
    expect(await follows('t1', 'cctp:0:0x*')).toBe(false);
    expect(await follows('t', 'cctp:0:0xab')).toBe(false);
    expect(await follows('t1', 'x*?\\')).toBe(false);
    expect(await follows('t[1]', 'xyz\\')).toBe(false);
    await client.del(`${p}:follow`);
  });

  it('stops asking when the status route answers 404, and marks the intent untracked', async () => {
    const intent = await submittedTransfer('t2');
    sandbox.admin.configure({ statusRoute: false });
    try {
      await follower.follow('b', 't2', intent);
      await waitFor(
        'the intent marked untracked',
        async () => (await recordOf('t2'))['intent_untracked'] === '1',
        {
          timeoutMs: 15_000,
        },
      );
      await waitFor('the intent to leave the follow set', async () => (await followed()).length === 0, {
        timeoutMs: 15_000,
      });
      expect((await recordOf('t2'))['intent_status']).toBe('pending');
      expect(await client.hget(`${prefix}:batch:b`, 'intents_untracked')).toBe('1');
    } finally {
      sandbox.admin.configure({ statusRoute: true });
    }
  });

  it('fails a job in the intents queue for an intent that ended failed after submit, and counts it once', async () => {
    const intent = await submittedTransfer('t6');
    sandbox.admin.setIntentStatus(intent, 'failed');
    await follower.follow('b', 't6', intent);
    const jobId = `b/t6/${intent.replaceAll(':', '_')}`;
    const job = await waitFor(
      'the failed job of the failed intent',
      async () => {
        const j = await readJob(client, prefix, 'intents', jobId);
        return j.finished === 'failed' ? j : undefined;
      },
      { timeoutMs: 15_000 },
    );
    expect(job.hash['failedReason']).toBe(
      `intent_failed: intent ${intent} of transfer b/t6 (BASE→ETH, ${TEST_EVM_ADDRESS}) ended failed after it was submitted: the service took the USDC and did not deliver it; check the chain and the service`,
    );
    expect(JSON.parse(job.hash['returnvalue'] ?? '{}')).toMatchObject({
      batch_id: 'b',
      transfer_id: 't6',
      intent_id: intent,
      intent_status: 'failed',
      ended: 'final',
    });
    expect(job.logs.join('\n')).toMatch(new RegExp(`intent ${intent} is failed`));
    expect(JSON.parse(job.hash['data'] ?? '{}')).toMatchObject({
      batchId: 'b',
      transferId: 't6',
      intentId: intent,
    });
    expect((await recordOf('t6'))['intent_status']).toBe('failed');
    expect(await client.hget(`${prefix}:batch:b`, 'intents_failed')).toBe('1');
    await waitFor('the intent to leave the follow set', async () => (await followed()).length === 0, {
      timeoutMs: 15_000,
    });
    await metrics.flush();
    expect(await client.hget(`${prefix}:metrics:counters`, 'intent_failed|BASE')).toBe('1');
  });

  /**
   * The transfer job that submitted `id` (queue `transfers-BASE`, id `b/<id>`), run by a real
   * BullMQ worker whose processor returns the job's outcome once `release` is called.
   */
  async function transferJob(id: string, intentId: string) {
    const connection = { url: redis.url, maxRetriesPerRequest: null };
    const queue = new Queue('transfers-BASE', { connection, prefix });
    let release: () => void = () => {};
    const released = new Promise<void>((r) => (release = r));
    const worker = new Worker(
      'transfers-BASE',
      async (job) => {
        await released;
        return { batch_id: 'b', transfer_id: job.data.transferId, state: 'submitted', intent_id: intentId, intent_status: 'pending', amount: '2.00' };
      },
      { connection, prefix },
    ); // prettier-ignore
    await queue.add('BASE→ETH 2.00 USDC', { batchId: 'b', transferId: id }, { jobId: `b/${id}` });
    const result = async () =>
      JSON.parse((await client.hget(`${prefix}:transfers-BASE:b/${id}`, 'returnvalue')) ?? 'null') as Record<
        string,
        unknown
      > | null;
    const logs = async () => (await queue.getJobLogs(`b/${id}`)).logs;
    const close = async () => {
      release();
      await worker.close();
      await queue.close();
    };
    return { release, result, logs, close };
  }

  it('adds the final intent status to the log of the transfer job that submitted it, and leaves its result', async () => {
    const intent = await submittedTransfer('t3');
    const job = await transferJob('t3', intent);
    try {
      job.release();
      await waitFor('the transfer job to complete', async () => (await job.result()) !== null, {
        timeoutMs: 15_000,
      });
      expect(await job.result()).toMatchObject({ intent_id: intent, intent_status: 'pending' });
      await follower.follow('b', 't3', intent);
      const logs = await waitFor(
        'the job log to say intent complete',
        async () => {
          const l = await job.logs();
          return l.some((line) => / intent complete$/.test(line)) ? l : undefined;
        },
        { timeoutMs: 15_000 },
      );
      expect(logs.filter((line) => / intent complete$/.test(line))).toHaveLength(1);
      // The result is the transfer as the job left it: never rewritten.
      expect(await client.hget(`${prefix}:transfers-BASE:b/t3`, 'returnvalue')).toBe(
        JSON.stringify({
          batch_id: 'b',
          transfer_id: 't3',
          state: 'submitted',
          intent_id: intent,
          intent_status: 'pending',
          amount: '2.00',
        }),
      );
      expect((await recordOf('t3'))['intent_status']).toBe('complete');
    } finally {
      await job.close();
    }
  });

  it('waits for a transfer job that ends after its intent is final, then adds the line to its log', async () => {
    const intent = await submittedTransfer('t4');
    const job = await transferJob('t4', intent);
    try {
      await follower.follow('b', 't4', intent);
      // The follower learns `complete` while the transfer job is still running: it keeps the intent
      // in the follow set until the job's result exists.
      await waitFor(
        'intent_status complete',
        async () => (await recordOf('t4'))['intent_status'] === 'complete',
        {
          timeoutMs: 15_000,
        },
      );
      expect(await job.result()).toBeNull();
      expect(await job.logs()).toEqual([]);
      expect((await followed()).some((m) => m.startsWith('b/t4/'))).toBe(true);
      job.release();
      await waitFor(
        'the job log to say intent complete',
        async () => (await job.logs()).some((line) => / intent complete$/.test(line)),
        {
          timeoutMs: 15_000,
        },
      );
      await waitFor('the intent to leave the follow set', async () => (await followed()).length === 0, {
        timeoutMs: 15_000,
      });
    } finally {
      await job.close();
    }
  });

  it('leaves a job about another intent alone', async () => {
    const intent = await submittedTransfer('t5');
    const job = await transferJob('t5', 'int-of-an-earlier-payload');
    try {
      job.release();
      await waitFor('the transfer job to complete', async () => (await job.result()) !== null, {
        timeoutMs: 15_000,
      });
      await follower.follow('b', 't5', intent);
      await waitFor(
        'intent_status complete',
        async () => (await recordOf('t5'))['intent_status'] === 'complete',
        {
          timeoutMs: 15_000,
        },
      );
      await waitFor('the intent to leave the follow set', async () => (await followed()).length === 0, {
        timeoutMs: 15_000,
      });
      expect(await job.result()).toMatchObject({
        intent_id: 'int-of-an-earlier-payload',
        intent_status: 'pending',
      });
      expect(await job.logs()).toEqual([]);
    } finally {
      await job.close();
    }
  });

  it('two followers on one Redis poll each due intent once: the claim keeps the other away', async () => {
    const p = 'follow-two';
    const calls = new Map<string, number>();
    // Each follower process has its own connection and its own service client, counted together.
    const counted = (c: ServiceClient): ServiceClient => ({
      ...c,
      getIntentStatus: async (id, options) => {
        calls.set(id, (calls.get(id) ?? 0) + 1);
        return await c.getIntentStatus(id, options);
      },
    });
    const clients = [new Redis(redis.url), new Redis(redis.url)];
    const intents: string[] = [];
    for (let i = 0; i < 24; i++) {
      const intent = await submittedTransfer(`c${i}`, p);
      // Final already: each needs exactly one poll, so a second poll can only be a double claim.
      sandbox.admin.setIntentStatus(intent, 'complete');
      intents.push(intent);
    }
    const followers = clients.map((c) => startFollower(p, c, counted(service)));
    try {
      // All due at the same moment, with both loops ticking every 50 ms.
      await Promise.all(intents.map((intent, i) => followers[i % 2]?.follow('b', `c${i}`, intent)));
      await waitFor(
        'every intent recorded complete',
        async () => (await client.hget(`${p}:batch:b`, 'intents_complete')) === '24',
        {
          timeoutMs: 30_000,
        },
      );
      await waitFor('the follow set to empty', async () => (await followed(p)).length === 0, {
        timeoutMs: 15_000,
      });
      expect([...calls.values()].every((n) => n === 1)).toBe(true);
      expect(calls.size).toBe(24);
    } finally {
      for (const f of followers) await f.close();
      for (const c of clients) c.disconnect();
    }
  });
});
