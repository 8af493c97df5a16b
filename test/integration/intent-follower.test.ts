import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/log/logger.ts';
import { createIntentFollower, type IntentFollower } from '../../src/queue/intent-follower.ts';
import { createSandbox, type Sandbox } from '../../src/sandbox/sandbox.ts';
import { createServiceClient } from '../../src/service/service-client.ts';
import { createTransferStore } from '../../src/store/transfer-store.ts';
import { waitFor } from '../helpers/cli.ts';
import { randomEvmAddress } from '../helpers/fixtures.ts';
import { startPrivateRedis, type TestRedis } from '../helpers/redis.ts';
import { signTestPermit, TEST_EVM_ADDRESS } from '../helpers/sandbox.ts';

/** Intent following against the sandbox's status route (pending → detected → minted → complete). */
describe('intent follower', () => {
  let redis: TestRedis;
  let client: Redis;
  let sandbox: Sandbox;
  let follower: IntentFollower;
  const prefix = 'follow';
  const logger = createLogger('silent');

  beforeAll(async () => {
    redis = await startPrivateRedis();
    client = new Redis(redis.url);
    sandbox = await createSandbox({ port: 0, statusStepMs: 150 });
    const config = loadConfig({ TRANSFER_API_URL: sandbox.url, TRANSFER_API_KEY: sandbox.apiKey });
    const service = createServiceClient({ baseUrl: sandbox.url, apiKey: config.transferApiKey! });
    follower = createIntentFollower({
      redisUrl: redis.url,
      prefix,
      service,
      store: createTransferStore({ redis: client, prefix }),
      logger,
      redis: client,
      delayFor: () => 100,
    });
  });
  afterAll(async () => {
    await follower?.close();
    client?.disconnect();
    await sandbox?.close();
    await redis?.stop();
  });

  /** A real accepted transfer in the sandbox, recorded as a submitted transfer in Redis. */
  async function submittedTransfer(id: string, nonce: bigint): Promise<string> {
    const permit = await signTestPermit({
      chain: 'BASE',
      spender: sandbox.spender,
      value: 2_000_000n,
      nonce,
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
    await client.hset(`${prefix}:t:b:${id}`, {
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

  it('follows a submitted intent until complete and records each status', async () => {
    const intent = await submittedTransfer('t1', 0n);
    await follower.follow('b', 't1', intent);
    await waitFor(
      'intent_status complete',
      async () => (await client.hget(`${prefix}:t:b:t1`, 'intent_status')) === 'complete',
      {
        timeoutMs: 15_000,
      },
    );
    expect(await client.hget(`${prefix}:batch:b`, 'intents_complete')).toBe('1');
  });

  it('stops asking when the status route answers 404', async () => {
    const intent = await submittedTransfer('t2', 1n);
    sandbox.admin.configure({ statusRoute: false });
    await follower.follow('b', 't2', intent);
    const queue = `${prefix}:intents`;
    // The follow job completes (not re-delayed), and goes: the record says what it learned.
    const jobKey = `${queue}:b/t2/${intent.replaceAll(':', '_')}`;
    await waitFor('the follow job to finish and go', async () => (await client.exists(jobKey)) === 0, {
      timeoutMs: 15_000,
    });
    expect(await client.hget(`${prefix}:t:b:t2`, 'intent_status')).toBe('pending');
    // …and marked as one whose settlement cannot be known (the batch's `settled` is then null).
    expect(await client.hget(`${prefix}:t:b:t2`, 'intent_untracked')).toBe('1');
    expect(await client.hget(`${prefix}:batch:b`, 'intents_untracked')).toBe('1');
    expect(await client.zcard(`${queue}:delayed`)).toBe(0);
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
    const close = async () => {
      release();
      await worker.close();
      await queue.close();
    };
    return { release, result, close };
  }

  it('carries the final intent status into the result of the transfer job that submitted it', async () => {
    sandbox.admin.configure({ statusRoute: true });
    const intent = await submittedTransfer('t3', 2n);
    const job = await transferJob('t3', intent);
    try {
      job.release();
      await waitFor('the transfer job to complete', async () => (await job.result()) !== null, {
        timeoutMs: 15_000,
      });
      expect(await job.result()).toMatchObject({ intent_id: intent, intent_status: 'pending' });
      await follower.follow('b', 't3', intent);
      const done = await waitFor(
        'the job result to say complete',
        async () => {
          const r = await job.result();
          return r?.['intent_status'] === 'complete' ? r : undefined;
        },
        { timeoutMs: 15_000 },
      );
      // Only the intent status changed, the rest of the outcome is as the job left it.
      expect(done).toEqual({
        batch_id: 'b',
        transfer_id: 't3',
        state: 'submitted',
        intent_id: intent,
        intent_status: 'complete',
        amount: '2.00',
      });
      expect(await client.hget(`${prefix}:t:b:t3`, 'intent_status')).toBe('complete');
    } finally {
      await job.close();
    }
  });

  it('waits for a transfer job that ends after its intent is final, then updates its result', async () => {
    sandbox.admin.configure({ statusRoute: true });
    const intent = await submittedTransfer('t4', 3n);
    const job = await transferJob('t4', intent);
    try {
      await follower.follow('b', 't4', intent);
      // The follower learns `complete` while the transfer job is still running.
      await waitFor(
        'intent_status complete',
        async () => (await client.hget(`${prefix}:t:b:t4`, 'intent_status')) === 'complete',
        { timeoutMs: 15_000 },
      );
      expect(await job.result()).toBeNull();
      job.release();
      await waitFor(
        'the job result to say complete',
        async () => (await job.result())?.['intent_status'] === 'complete',
        { timeoutMs: 15_000 },
      );
    } finally {
      await job.close();
    }
  });

  it('leaves a job result about another intent alone', async () => {
    sandbox.admin.configure({ statusRoute: true });
    const intent = await submittedTransfer('t5', 4n);
    const job = await transferJob('t5', 'int-of-an-earlier-payload');
    try {
      job.release();
      await waitFor('the transfer job to complete', async () => (await job.result()) !== null, {
        timeoutMs: 15_000,
      });
      await follower.follow('b', 't5', intent);
      await waitFor(
        'intent_status complete',
        async () => (await client.hget(`${prefix}:t:b:t5`, 'intent_status')) === 'complete',
        { timeoutMs: 15_000 },
      );
      const followJob = `${prefix}:intents:b/t5/${intent.replaceAll(':', '_')}`;
      // Its intent complete, the follow job ends and is removed (removeOnComplete).
      await waitFor('the follow job to end', async () => (await client.exists(followJob)) === 0, {
        timeoutMs: 15_000,
      });
      expect(await job.result()).toMatchObject({
        intent_id: 'int-of-an-earlier-payload',
        intent_status: 'pending',
      });
    } finally {
      await job.close();
    }
  });
});
