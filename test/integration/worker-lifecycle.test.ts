import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, spawnCli, waitFor } from '../helpers/cli.ts';
import { startPrivateRedis, type TestRedis } from '../helpers/redis.ts';
import { TEST_EVM_KEY } from '../helpers/sandbox.ts';

const baseEnv = {
  TRANSFER_API_URL: 'http://127.0.0.1:9',
  TRANSFER_API_KEY: 'sk_test_lifecycle',
  EVM_PRIVATE_KEY: TEST_EVM_KEY,
  PERMIT_SPENDER: '0x5a4dB0c5A4dB0c5A4dB0c5A4db0C5A4DB0C5A4d0',
  LOG_LEVEL: 'info',
};

describe('worker lifecycle', () => {
  let volatile: TestRedis;
  let durable: TestRedis;
  beforeAll(async () => {
    volatile = await startPrivateRedis({ durable: false });
    durable = await startPrivateRedis({ durable: true });
  });
  afterAll(async () => {
    await volatile?.stop();
    await durable?.stop();
  });

  it('refuses a Redis that can lose acknowledged writes, naming the setting (exit 2)', async () => {
    const res = await runCli(['worker'], { ...baseEnv, REDIS_URL: volatile.url }, { timeoutMs: 30_000 });
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/appendonly/);
    expect(res.stderr).not.toContain(TEST_EVM_KEY.slice(2));
  });

  it('runs on a volatile Redis only with ALLOW_VOLATILE_REDIS=true, and stops gracefully on SIGTERM', async () => {
    const w = spawnCli(['worker'], {
      ...baseEnv,
      REDIS_URL: volatile.url,
      ALLOW_VOLATILE_REDIS: 'true',
      SCREENING_ONCHAIN: 'off',
    });
    await waitFor('the worker to start', async () => w.output().includes('worker started'), {
      timeoutMs: 20_000,
    });
    expect(w.output()).toMatch(/not durable/);
    expect(await w.stop(15_000)).toBe(0);
    expect(w.output()).toMatch(/worker stopped/);
    // SCREENING_ONCHAIN=off reads nothing on chain, so it names no chain as unscreened.
    expect(w.output()).not.toMatch(/not screened on chain/);
  });

  it('a SIGTERM while it starts stops it once started, gracefully (exit 0), instead of killing it mid-way', async () => {
    const w = spawnCli(['worker'], {
      ...baseEnv,
      REDIS_URL: volatile.url,
      ALLOW_VOLATILE_REDIS: 'true',
      SCREENING_ONCHAIN: 'off',
    });
    // Its Redis checked (the first thing it does), the rest of its start still to come.
    await waitFor('the Redis check', async () => /not durable/.test(w.output()), { timeoutMs: 20_000 });
    expect(w.output()).not.toMatch(/worker started/);
    w.child.kill('SIGTERM');
    const code = await new Promise<number | null>((resolve) => w.child.once('exit', (c) => resolve(c)));
    expect({ code, signal: w.child.signalCode }).toEqual({ code: 0, signal: null });
    expect(w.output()).toMatch(/worker started[\s\S]*shutting down[\s\S]*worker stopped/);
  });

  it('starts on a durable Redis and exits 0 on SIGINT', async () => {
    const w = spawnCli(['worker'], { ...baseEnv, REDIS_URL: durable.url });
    await waitFor('the worker to start', async () => w.output().includes('worker started'), {
      timeoutMs: 20_000,
    });
    // No RPC configured: every chain is named as not screened on chain (SCREENING_ONCHAIN=on).
    await waitFor('the worker to name the chains it cannot screen', async () =>
      /"level":40.*not screened on chain \(no RPC configured\): ETH, BASE, ARB, POLYGON, SOLANA/.test(
        w.output(),
      ),
    );
    w.child.kill('SIGINT');
    const code = await new Promise<number | null>((resolve) => w.child.once('exit', (c) => resolve(c)));
    expect(code).toBe(0);
    expect(w.output()).not.toContain(TEST_EVM_KEY.slice(2));
  });
});
