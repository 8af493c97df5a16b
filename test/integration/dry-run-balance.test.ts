import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';
import { csvOf, randomEvmAddress, type Row } from '../helpers/fixtures.ts';
import {
  OTHER_EVM_KEY,
  startSandboxProcess,
  TEST_EVM_ADDRESS,
  TEST_EVM_KEY,
  type SandboxProcess,
} from '../helpers/sandbox.ts';

/** anvil's dev key 2 (public, never funded on a real chain): a third treasury owner. */
const THIRD_EVM_KEY = '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a' as const;

/*
 * Issue 33: the dry run reads no key (docs/keys.md): these runs, without a Redis
 * where workers publish their addresses, name the treasury by EVM_OWNER_ADDRESSES (they set
 * EVM_PRIVATE_KEY before).
 */
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
      EVM_OWNER_ADDRESSES: TEST_EVM_ADDRESS,
      EVM_RPC_URL_BASE: sandbox.rpc.BASE,
      EVM_RPC_URL_ETH: sandbox.rpc.ETH,
      REDIS_URL: 'redis://127.0.0.1:1',
      // Compose's key settings as the host sees them: ignored by the dry run, which reads no key.
      EVM_KEYSTORE_FILE: '/secrets/owner-1.json',
      EVM_KEYSTORE_PASSWORD_FILE: '/secrets/missing',
      SOLANA_KEYPAIR_FILE: '/secrets/solana-keypair.json',
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

  it('sums the owners of each chain and says when the batch needs rebalancing between them', async () => {
    await sandbox.admin.reset();
    await sandbox.admin.configure({ treasuryBalance: '1000' });
    const keys = [TEST_EVM_KEY, OTHER_EVM_KEY, THIRD_EVM_KEY];
    const [a, b, c] = keys.map((k) => privateKeyToAccount(k).address) as [string, string, string];
    // Per chain, the owners' balances (in key order) and what the rows need:
    // BASE     100 + 100 + 10  = 210 for 70 + 70 + 70: enough together, but each owner pays only one 70;
    // ETH      100 + 100 + 0   = 200 for 150 + 20: enough together, but no owner holds 150;
    // ARB      100 + 50 + 0    = 150 for 80 + 40: the 80 on the first, the 40 on the second;
    // POLYGON  100 + 100 + 100 = 300 for 500: not enough, however it is split.
    const balances: Record<string, [string, string, string]> = {
      BASE: ['100', '100', '10'],
      ETH: ['100', '100', '0'],
      ARB: ['100', '50', '0'],
      POLYGON: ['100', '100', '100'],
    };
    for (const [chain, amounts] of Object.entries(balances)) {
      for (const [i, owner] of [a, b, c].entries())
        await sandbox.admin.setBalance(chain, owner, amounts[i] as string);
    }
    const row = (from: string, amount: string): Row => ({
      from,
      to: 'ARB',
      amount,
      recipient: randomEvmAddress(),
    });
    const dir = mkdtempSync(join(tmpdir(), 'usdc-dry-owners-'));
    const file = join(dir, 'owners.csv');
    writeFileSync(
      file,
      csvOf([
        row('BASE', '70'),
        row('BASE', '70'),
        row('BASE', '70'),
        row('ETH', '150'),
        row('ETH', '20'),
        row('ARB', '80'),
        row('ARB', '40'),
        row('POLYGON', '500'),
      ]),
    );
    const env = {
      TRANSFER_API_URL: sandbox.url,
      TRANSFER_API_KEY: sandbox.api_key,
      EVM_OWNER_ADDRESSES: [a, b, c].join(','),
      EVM_RPC_URL_ETH: sandbox.rpc.ETH,
      EVM_RPC_URL_BASE: sandbox.rpc.BASE,
      EVM_RPC_URL_ARB: sandbox.rpc.ARB,
      EVM_RPC_URL_POLYGON: sandbox.rpc.POLYGON,
      REDIS_URL: 'redis://127.0.0.1:1',
    };
    try {
      const human = await runCli(['enqueue', file, '--dry-run'], env);
      expect(human.code, human.stderr).toBe(0);
      const text = human.stdout;
      expect(text).toMatch(/BASE\s+210\.00\s+210\.00\s+REBALANCE\s+3 owners: 100\.00 \+ 100\.00 \+ 10\.00/);
      expect(text).toMatch(/ETH\s+170\.00\s+200\.00\s+REBALANCE\s+3 owners: 100\.00 \+ 100\.00 \+ 0\.00/);
      expect(text).toMatch(/ARB\s+120\.00\s+150\.00\s+ok\s+3 owners: 100\.00 \+ 50\.00 \+ 0\.00/);
      expect(text).toMatch(/POLYGON\s+500\.00\s+300\.00\s+NOT COVERED\s+3 owners/);
      expect(text).toContain(
        'the BASE treasury covers this batch across its 3 owners (210.00 USDC) but needs rebalancing between owners: ' +
          "its rows do not split over the owners' balances as they stand (1 row left over)",
      );
      expect(text).toContain(
        'the ETH treasury covers this batch across its 3 owners (200.00 USDC) but needs rebalancing between owners: ' +
          '1 row needs more than any single owner holds (the largest row 150.00, the most one owner holds 100.00 USDC)',
      );
      expect(text).toContain(
        'the POLYGON treasury cannot cover this batch: short by 200.00 USDC (its 3 owners hold 300.00 USDC together)',
      );
      expect(text).not.toMatch(/the ARB treasury/);

      const json = await runCli(['enqueue', file, '--dry-run', '--json'], env);
      expect(json.code, json.stderr).toBe(0);
      const doc = JSON.parse(json.stdout) as {
        balances: {
          chain: string;
          needed: string;
          available: string | null;
          covered: boolean | null;
          rebalance: boolean | null;
          largest_row: string;
          rows_over_every_owner: number | null;
          owners: { address: string; available: string | null }[];
        }[];
      };
      const of = (chain: string) => doc.balances.find((x) => x.chain === chain);
      expect(of('BASE')).toEqual({
        chain: 'BASE',
        needed: '210.00',
        available: '210.00',
        covered: true,
        rebalance: true,
        largest_row: '70.00',
        rows_over_every_owner: 0,
        owners: [
          { address: a, available: '100.00' },
          { address: b, available: '100.00' },
          { address: c, available: '10.00' },
        ],
      });
      expect(of('ETH')).toMatchObject({ covered: true, rebalance: true, rows_over_every_owner: 1 });
      expect(of('ARB')).toMatchObject({ covered: true, rebalance: false, rows_over_every_owner: 0 });
      expect(of('POLYGON')).toMatchObject({ available: '300.00', covered: false, rebalance: false });
      for (const out of [human.stdout, human.stderr, json.stdout, json.stderr])
        for (const k of keys) expect(out.toLowerCase()).not.toContain(k.slice(2));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
