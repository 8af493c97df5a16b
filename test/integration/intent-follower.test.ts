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
    // The follow job completes (not re-delayed) and the recorded status is left as it was.
    await waitFor('the follow job to finish', async () => (await client.zcard(`${queue}:completed`)) >= 2, {
      timeoutMs: 15_000,
    });
    expect(await client.hget(`${prefix}:t:b:t2`, 'intent_status')).toBe('pending');
    // …and marked as one whose settlement cannot be known (the batch's `settled` is then null).
    expect(await client.hget(`${prefix}:t:b:t2`, 'intent_untracked')).toBe('1');
    expect(await client.hget(`${prefix}:batch:b`, 'intents_untracked')).toBe('1');
    expect(await client.zcard(`${queue}:delayed`)).toBe(0);
  });
});
