import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { signingKeys } from '../../src/signing/evm/keystore.ts';
import { createLogger } from '../../src/log/logger.ts';
import { readPublishedAddresses } from '../../src/store/published-addresses.ts';
import { startWorker } from '../../src/worker/start-worker.ts';
import { waitFor } from '../helpers/cli.ts';
import { startPrivateRedis, type TestRedis } from '../helpers/redis.ts';
import { TEST_EVM_ADDRESS, TEST_EVM_KEY } from '../helpers/sandbox.ts';

/**
 * The worker's start in process, watched from Redis: every connection a start opens (its own, the
 * BullMQ workers', the follower's, the schedules') shows in CLIENT LIST until it is closed.
 */
describe('worker start', () => {
  let redis: TestRedis;
  let probe: Redis;
  const logger = createLogger('silent');
  const configOf = (url: string) =>
    loadConfig(
      {
        REDIS_URL: url,
        TRANSFER_API_URL: 'http://127.0.0.1:9',
        TRANSFER_API_KEY: 'sk_test_start',
        EVM_PRIVATE_KEY: TEST_EVM_KEY,
        PERMIT_SPENDER: '0x5a4dB0c5A4dB0c5A4dB0c5A4db0C5A4DB0C5A4d0',
        QUEUE_PREFIX: `start${Math.random().toString(36).slice(2, 8)}`,
      },
      { keys: signingKeys, service: true, signingKey: true },
    );
  /** Connections other than the probe's own. */
  const others = async (): Promise<number> =>
    ((await probe.client('LIST')) as string).trim().split('\n').length - 1;

  beforeAll(async () => {
    redis = await startPrivateRedis({ durable: true });
    probe = new Redis(redis.url);
  });
  afterAll(async () => {
    probe?.disconnect();
    await redis?.stop();
  });

  it('a start that fails half-way (a Solana key the signer refuses) closes every connection it had opened', async () => {
    const config = configOf(redis.url);
    // 64 bytes whose public half is not the secret's: loadConfig refuses it, so it is set here, as
    // a configuration that passed the loader's checks and fails the signer's.
    const bad = { ...config, solanaSecretKey: new Uint8Array(64).fill(7) };
    await expect(startWorker(bad, logger)).rejects.toThrow(/not a valid keypair/);
    await waitFor('the failed start to close its connections', async () => (await others()) === 0, {
      timeoutMs: 10_000,
    });
  });

  it('a started worker opens its connections and closes all of them', async () => {
    const config = configOf(redis.url);
    const running = await startWorker(config, logger);
    expect(await others()).toBeGreaterThan(0);
    // Its keys' public addresses are published before it takes work, for the processes holding no key.
    expect(await readPublishedAddresses(probe, config.queuePrefix)).toMatchObject({
      evm: [TEST_EVM_ADDRESS],
      solana: undefined,
    });
    await running.close();
    // …and stay published once it stopped: what the workers last published.
    expect((await readPublishedAddresses(probe, config.queuePrefix)).evm).toEqual([TEST_EVM_ADDRESS]);
    await waitFor('the stopped worker to close its connections', async () => (await others()) === 0, {
      timeoutMs: 10_000,
    });
  });
});
