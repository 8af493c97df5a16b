import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';
import { startSandboxProcess, TEST_EVM_KEY, type SandboxProcess } from '../helpers/sandbox.ts';

describe('enqueue --dry-run balance pre-flight', () => {
  let sandbox: SandboxProcess;
  beforeAll(async () => {
    // The treasury holds 1,000 USDC on every chain: the sample needs 1,625.50 from BASE.
    sandbox = await startSandboxProcess({ config: { treasuryBalance: '1000' } });
  });
  afterAll(async () => {
    await sandbox?.stop();
  });

  it('shows needed vs available per source chain and says plainly what cannot be covered', async () => {
    const env = {
      TRANSFER_API_URL: sandbox.url,
      TRANSFER_API_KEY: sandbox.api_key,
      EVM_PRIVATE_KEY: TEST_EVM_KEY,
      EVM_RPC_URL_BASE: sandbox.rpc.BASE,
      EVM_RPC_URL_ETH: sandbox.rpc.ETH,
      REDIS_URL: 'redis://127.0.0.1:1',
    };
    const human = await runCli(['enqueue', 'samples/payouts.csv', '--dry-run'], env);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/BASE\s+1625\.50\s+1000\.00\s+NOT COVERED/);
    expect(human.stdout).toMatch(/ETH\s+999\.99\s+1000\.00\s+ok/);
    expect(human.stdout).toMatch(/ARB\s+42\.75\s+unknown \(no RPC\)/);
    expect(human.stdout).toMatch(/BASE treasury cannot cover this batch: short by 625\.50 USDC/);

    const json = await runCli(['enqueue', 'samples/payouts.csv', '--dry-run', '--json'], env);
    const doc = JSON.parse(json.stdout) as { balances: { chain: string; covered: boolean | null }[] };
    expect(doc.balances.find((b) => b.chain === 'BASE')?.covered).toBe(false);
    expect(doc.balances.find((b) => b.chain === 'ETH')?.covered).toBe(true);
    expect(doc.balances.find((b) => b.chain === 'SOLANA')?.covered).toBeNull();
  });

  it('keeps its own estimates under API_RATE_LIMIT, without Redis', async () => {
    await sandbox.admin.reset();
    await sandbox.admin.configure({ treasuryBalance: '1000' });
    const env = {
      TRANSFER_API_URL: sandbox.url,
      TRANSFER_API_KEY: sandbox.api_key,
      REDIS_URL: 'redis://127.0.0.1:1',
      API_RATE_LIMIT: '3',
    };
    const res = await runCli(['enqueue', 'samples/payouts.csv', '--dry-run', '--json'], env);
    expect(res.code, res.stderr).toBe(0);
    const at = (await sandbox.admin.requests()).map((r) => r.at).sort((x, y) => x - y);
    // 8 rows, 8 estimates, at most 3 in any second: the 4th a second after the 1st, and so on
    // (timed at the sandbox: 400 ms left for request jitter; without the limiter all 8 arrive at once).
    expect(at).toHaveLength(8);
    const tight = at.slice(3).filter((t, i) => t - at[i]! <= 600);
    expect(tight).toEqual([]);
  });
});
