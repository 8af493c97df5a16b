import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, runCli, type CliResult } from '../helpers/cli.ts';
import { startFakeEvmRpc, type FakeEvmRpc } from '../helpers/fake-evm-rpc.ts';
import { csvOf, randomEvmAddress, randomSolanaAddress, TEST_EVM_KEY } from '../helpers/fixtures.ts';
import { redisForSuite, type SuiteRedis } from '../helpers/redis.ts';
import { startServe } from '../helpers/serve.ts';
import { v3Keystore } from '../helpers/v3-keystore.ts';

/*
 * Keys stay in the worker (docs/keys.md, issue 33). `serve`, `enqueue`,
 * `batches`, `status` and `wallets` never read a key nor open a keystore: the key settings of an
 * operator's `.env` — here compose's container paths (/secrets/…), which do not exist on this host,
 * as on an operator's machine next to that `.env` — do not stop them. The keystore below has its
 * public `address` field, and its password file does not exist: a command that tried to open it
 * would fail, so a command that works and shows the keystore's address has read only that field.
 */

const dir = mkdtempSync(join(tmpdir(), 'usdc-keys-in-worker-'));
const OWNER = privateKeyToAccount(TEST_EVM_KEY as `0x${string}`).address;
const keystore = join(dir, 'owner-1.json');
writeFileSync(keystore, JSON.stringify(v3Keystore(TEST_EVM_KEY as `0x${string}`, 'never read here')), {
  mode: 0o600,
});
const HOOK = 'hook-token-for-keys-in-worker-0123';

/** The key settings of compose's `.env`, as seen from the host: none of their files can be read. */
const UNREADABLE_KEYS = {
  EVM_KEYSTORE_PASSWORD_FILE: '/secrets/missing',
  SOLANA_KEYPAIR_FILE: '/secrets/solana-keypair.json',
};

describe('commands that do not sign, with key settings they cannot read', () => {
  let redis: SuiteRedis;
  let rpc: FakeEvmRpc;
  let env: Record<string, string>;

  beforeAll(async () => {
    redis = await redisForSuite();
    rpc = await startFakeEvmRpc();
    rpc.balances.set(OWNER, 1_234_500_000n);
    env = {
      REDIS_URL: redis.url,
      QUEUE_PREFIX: redis.prefix,
      HOOK_TOKEN: HOOK,
      EVM_RPC_URL_BASE: rpc.url,
      EVM_KEYSTORE_FILE: keystore,
      ...UNREADABLE_KEYS,
    };
  });
  afterAll(async () => {
    await rpc?.close();
    await redis?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('enqueue, batches and status work, and never open the keystore', async () => {
    const file = join(dir, 'batch.csv');
    writeFileSync(file, csvOf([{ from: 'BASE', to: 'ARB', amount: '12.50', recipient: randomEvmAddress() }]));
    const enqueued = await runCli(['enqueue', file, '--batch-id', 'keys-1', '--json'], env);
    expect(enqueued.code, enqueued.stderr).toBe(0);
    expect(JSON.parse(enqueued.stdout)).toMatchObject({ batch_id: 'keys-1', accepted: 1 });

    const batches = await runCli(['batches'], env);
    expect(batches.code, batches.stderr).toBe(0);
    expect(batches.stdout).toContain('keys-1');

    const status = await runCli(['status', 'keys-1', '--json'], env);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ batch_id: 'keys-1', counts: { queued: 1 } });
    for (const r of [enqueued, batches, status]) expect(r.stderr).not.toMatch(/EVM_KEYSTORE|SOLANA_KEYPAIR/);
  });

  it('wallets shows the keystore’s address from its address field', async () => {
    const res = await runCli(['wallets'], env);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain(`EVM owner  ${OWNER}`);
    expect(res.stdout).toContain('addresses  the configuration');
    expect(res.stdout).toMatch(/^BASE +yes +0 +1234\.50 /m);
    expect(res.stdout).toContain('Solana wallet  not known');
  });

  it('wallets shows EVM_OWNER_ADDRESSES and SOLANA_ADDRESS, which come before the keystore', async () => {
    const owners = [randomEvmAddress(), randomEvmAddress()];
    const solana = randomSolanaAddress();
    const res = await runCli(['wallets', '--json'], {
      ...env,
      EVM_OWNER_ADDRESSES: owners.join(','),
      SOLANA_ADDRESS: solana,
    });
    expect(res.code, res.stderr).toBe(0);
    const report = JSON.parse(res.stdout) as {
      evm: { owners: { address: string }[] };
      solana: { address: string };
      addresses_from: unknown;
    };
    expect(report.evm.owners.map((o) => o.address)).toEqual(owners);
    expect(report.solana.address).toBe(solana);
    expect(report.addresses_from).toEqual({ evm: 'configuration', solana: 'configuration' });
  });

  it('serve starts and /v1/treasury shows the keystore’s address and balance', async () => {
    const api = await startServe(env);
    try {
      const res = await api.call('/v1/treasury', { token: HOOK });
      expect(res.status).toBe(200);
      const view = (await res.json()) as {
        chains: { chain: string; balance: string | null; owners: { address: string; balance: string }[] }[];
      };
      expect(view.chains.find((c) => c.chain === 'BASE')).toMatchObject({
        balance: '1234.50',
        owners: [{ address: OWNER, balance: '1234.50' }],
      });
    } finally {
      await api.stop();
    }
    expect(api.process.output()).not.toMatch(/EVM_KEYSTORE|SOLANA_KEYPAIR/);
  });

  it('refuses a balance above USDC’s totalSupply() as a reading: wallets, /v1/treasury and rebalance --dry-run do not show it', async () => {
    // Issue 43: an RPC answering balanceOf = 2^256 − 1 was believed.
    rpc.balances.set(OWNER, 2n ** 256n - 1n);
    const api = await startServe(env);
    try {
      const wallets = await runCli(['wallets', '--json'], env);
      expect(wallets.stdout).not.toContain(String(2n ** 256n - 1n));
      expect(wallets.stdout).not.toMatch(/115792089237316195423570985008687907853269984665640564039457\./);
      expect(`${wallets.stdout}${wallets.stderr}`).toMatch(/answers more than USDC's totalSupply\(\)/);

      const res = await api.call('/v1/treasury', { token: HOOK });
      expect(res.status).toBe(200);
      const view = (await res.json()) as { chains: { chain: string; balance: string | null }[] };
      expect(view.chains.find((c) => c.chain === 'BASE')?.balance ?? null).toBeNull();

      const policy = join(dir, 'plausible.yaml');
      writeFileSync(policy, 'chains:\n  BASE: { min: 10, target: 20 }\n');
      const dry = await runCli(['rebalance', policy, '--dry-run'], {
        ...env,
        TRANSFER_API_URL: 'http://127.0.0.1:9',
        TRANSFER_API_KEY: 'sk_test_unused',
      });
      expect(dry.code, dry.stdout).toBe(1);
      expect(`${dry.stdout}${dry.stderr}`).toMatch(/BASE.*more than USDC's totalSupply\(\)/);
    } finally {
      await api.stop();
      rpc.balances.set(OWNER, 1_234_500_000n);
    }
  });

  it('wallets says where addresses come from when none is known, and a FIFO keystore does not hang it', async () => {
    const fifo = join(dir, 'keystore-fifo');
    execFileSync('mkfifo', [fifo]);
    for (const file of ['/dev/zero', fifo, dir]) {
      const res = await runBounded(['wallets'], { ...env, EVM_KEYSTORE_FILE: file });
      expect(res.code, `${file}: ${res.stderr}`).toBe(2);
      expect(res.stderr).toContain('EVM_OWNER_ADDRESSES: no wallet address is known');
      expect(res.stderr).toContain('no worker has published its addresses to Redis yet');
    }
  });
});

/** `usdc-batch ARGS` under a 3 GiB address-space limit: a read without bound aborts it. */
function runBounded(args: string[], env: Record<string, string>): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', 'ulimit -v 3145728 && exec "$0" "$@"', process.execPath, BIN, ...args], {
      cwd: dir,
      env: { PATH: process.env['PATH'] ?? '', HOME: dir, LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
