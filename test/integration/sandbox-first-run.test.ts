import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseDotenv } from 'dotenv';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { signingKeys } from '../../src/signing/evm/keystore.ts';
import { runCli, spawnCli, waitFor, type SpawnedProcess } from '../helpers/cli.ts';
import { startServe } from '../helpers/serve.ts';

/**
 * `usdc-batch sandbox --redis --write-env FILE --metrics-token-file TOKEN`: a ready environment for a
 * worker and `serve`, and the metrics credential a Prometheus scrapes that `serve` with (compose's
 * sandbox and monitoring profiles together).
 */
describe('usdc-batch sandbox for a first run', () => {
  const dir = mkdtempSync(join(tmpdir(), 'usdc-first-run-'));
  const file = join(dir, 'sandbox.env');
  const tokenFile = join(dir, 'metrics-token');
  let sandbox: SpawnedProcess;
  let env: Record<string, string>;

  beforeAll(async () => {
    sandbox = spawnCli(
      ['sandbox', '--port', '0', '--redis', '--write-env', file, '--metrics-token-file', tokenFile],
      {},
    );
    await waitFor('the sandbox to start', async () => sandbox.output().includes('press Ctrl-C to stop'), {
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    env = parseDotenv(readFileSync(file));
  });
  afterAll(async () => {
    await sandbox?.stop(10_000);
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes the settings, throwaway keys and a throwaway HOOK_TOKEN, for its owner only', () => {
    const text = readFileSync(file, 'utf8');
    expect(text.split('\n')[0]).toMatch(/^# written by usdc-batch sandbox: throwaway/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(env['HOOK_TOKEN']).toMatch(/^throwaway-[0-9a-f]{32}$/);
    expect(text).toMatch(/# THROWAWAY keys made for this sandbox run/);
    for (const key of ['EVM_PRIVATE_KEY_FILE', 'SOLANA_KEYPAIR_FILE'] as const) {
      expect(statSync(env[key]!).mode & 0o777, key).toBe(0o600);
    }
    // The keys themselves are in their files, never on the screen.
    const evmKey = readFileSync(env['EVM_PRIVATE_KEY_FILE']!, 'utf8').trim();
    expect(evmKey).toMatch(/^0x[0-9a-f]{64}$/);
    expect(sandbox.output()).not.toContain(evmKey.slice(2));
    expect(sandbox.output()).not.toContain(env['HOOK_TOKEN']);
  });

  it('writes a throwaway METRICS_TOKEN, and that token alone to a file a Prometheus of another user can read', () => {
    expect(env['METRICS_TOKEN']).toMatch(/^throwaway-[0-9a-f]{32}$/);
    expect(env['METRICS_TOKEN']).not.toBe(env['HOOK_TOKEN']);
    expect(readFileSync(tokenFile, 'utf8')).toBe(`${env['METRICS_TOKEN']}\n`);
    expect(statSync(tokenFile).mode & 0o777).toBe(0o644);
    expect(sandbox.output()).not.toContain(env['METRICS_TOKEN']);
  });

  it("lets the file's token scrape serve's /metrics and nothing else (role metrics)", async () => {
    const api = await startServe(env);
    try {
      const token = readFileSync(tokenFile, 'utf8').trim();
      const metrics = await api.call('/metrics', { token });
      expect(metrics.status).toBe(200);
      expect(await metrics.text()).toContain('usdc_batch_workers');
      expect((await api.call('/v1/batches', { token })).status).toBe(403);
    } finally {
      await api.stop();
    }
  });

  it('is a configuration a worker and serve accept as it is', () => {
    const config = loadConfig(env, { keys: signingKeys, service: true, signingKey: true, access: true });
    expect(config.transferApiUrl).toBe(env['TRANSFER_API_URL']);
    // The sandbox serves Circle's attestation API's routes at /cctp (docs/cctp.md).
    expect(config.cctpApiUrl).toBe(`${env['TRANSFER_API_URL']}/cctp`);
    expect(config.evmPrivateKeys).toHaveLength(1);
    expect(config.solanaSecretKey).toBeDefined();
    // Their public addresses, for the commands that hold no key (docs/keys.md):
    // the worker accepts them only as its own keys' addresses.
    expect(env['EVM_OWNER_ADDRESSES']).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect(config.evmOwnerAddresses).toEqual([env['EVM_OWNER_ADDRESSES']]);
    expect(config.solanaAddress).toBe(env['SOLANA_ADDRESS']);
  });

  it('runs a private Redis a worker accepts: durable (append-only, fsync always)', async () => {
    const redis = new Redis(env['REDIS_URL']!, { maxRetriesPerRequest: 1 });
    try {
      expect(await redis.config('GET', 'appendonly')).toEqual(['appendonly', 'yes']);
      expect(await redis.config('GET', 'appendfsync')).toEqual(['appendfsync', 'always']);
    } finally {
      redis.disconnect();
    }
  });

  it('leaves nothing behind when it stops: no env file, no token file, no keys, no Redis', async () => {
    const keyDir = env['EVM_PRIVATE_KEY_FILE']!.replace(/\/[^/]+$/, '');
    expect(await sandbox.stop(10_000)).toBe(0);
    expect(existsSync(file)).toBe(false);
    expect(existsSync(tokenFile)).toBe(false);
    expect(existsSync(keyDir)).toBe(false);
    const redis = new Redis(env['REDIS_URL']!, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    redis.on('error', () => {});
    await expect(redis.connect()).rejects.toThrow();
    redis.disconnect();
  });

  it('refuses to overwrite a file it did not write', async () => {
    const mine = join(dir, 'my.env');
    writeFileSync(mine, 'EVM_PRIVATE_KEY_FILE=/real/treasury.key\n');
    const res = await runCli(['sandbox', '--port', '0', '--write-env', mine], {});
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/was not written by usdc-batch sandbox: not overwriting it/);
    expect(readFileSync(mine, 'utf8')).toBe('EVM_PRIVATE_KEY_FILE=/real/treasury.key\n');
    const notToken = join(dir, 'not-a-token');
    writeFileSync(notToken, 'my real metrics token\n');
    const other = await runCli(
      ['sandbox', '--port', '0', '--write-env', join(dir, 'other.env'), '--metrics-token-file', notToken],
      {},
    );
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(/not-a-token exists and was not written by usdc-batch sandbox/);
    expect(readFileSync(notToken, 'utf8')).toBe('my real metrics token\n');
    const alone = await runCli(['sandbox', '--port', '0', '--metrics-token-file', join(dir, 't')], {});
    expect(alone.code).toBe(2);
    expect(alone.stderr).toMatch(/--metrics-token-file needs --write-env/);
  });
});
