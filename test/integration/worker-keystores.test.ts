import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { privateKeyToAccount } from 'viem/accounts';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { formatUsdc } from '../../src/domain/money.ts';
import { createChainReader } from '../../src/signing/evm/chain-reader.ts';
import { runCli, waitFor } from '../helpers/cli.ts';
import { checkLedger, startStack, type Stack } from '../helpers/e2e.ts';
import { randomEvmAddress, TEST_EVM_KEY, type Row } from '../helpers/fixtures.ts';
import { v3Keystore } from '../helpers/v3-keystore.ts';

/*
 * Keys at rest (issue 27): a worker whose treasury owners are two V3 keystores (one scrypt, one
 * pbkdf2, written by another implementation than the one that reads them) pays a batch from both
 * owners against the sandbox, and `wallets` lists both.
 */

// anvil's well-known development keys (throwaway, public).
const KEYS = [TEST_EVM_KEY, '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d'] as const;
const OWNERS = KEYS.map((k) => privateKeyToAccount(k).address);
const PASSWORD = 'a keystore password that is never printed';
const USDC = 1_000_000n;

describe('worker: treasury owners from keystores', () => {
  let stack: Stack | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'usdc-keystores-'));
  afterEach(async () => {
    await stack?.stop();
    stack = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it('pays a batch from both keystores’ owners, and wallets lists them', async () => {
    const files = [join(dir, 'owner-a.json'), join(dir, 'owner-b.json'), join(dir, 'password')] as const;
    writeFileSync(
      files[0],
      JSON.stringify(v3Keystore(KEYS[0], PASSWORD, { kdf: 'scrypt', n: 4096, r: 8, p: 1 })),
      {
        mode: 0o600,
      },
    );
    writeFileSync(files[1], JSON.stringify(v3Keystore(KEYS[1], PASSWORD, { kdf: 'pbkdf2', c: 20_000 })), {
      mode: 0o600,
    });
    writeFileSync(files[2], `${PASSWORD}\n`, { mode: 0o600 });
    stack = await startStack({
      latencyMs: 10,
      env: {
        EVM_PRIVATE_KEY: '',
        EVM_KEYSTORE_FILE: `${files[0]},${files[1]}`,
        EVM_KEYSTORE_PASSWORD_FILE: files[2],
      },
    });
    const [a, b] = OWNERS as [string, string];

    // The first owner covers three rows of 10 USDC, the second the rest: both must sign.
    const reader = createChainReader({ config: loadConfig({ EVM_RPC_URL_BASE: stack.sandbox.rpc.BASE }) });
    for (const [owner, amount] of [
      [a, 30n * USDC],
      [b, 1_000n * USDC],
    ] as const) {
      await stack.sandbox.admin.setBalance('BASE', owner, formatUsdc(amount));
      await waitFor(`BASE RPC to show ${owner}'s balance`, async () =>
        (await reader.usdcBalance('BASE', owner)) === amount ? true : undefined,
      );
    }

    // Before any worker ran: `wallets` takes the owners from the keystores' public address fields,
    // without opening them (issue 33: keys stay in the worker).
    const wallets = await runCli(['wallets'], {
      ...stack.env,
      EVM_KEYSTORE_PASSWORD_FILE: '/secrets/missing',
    });
    expect(wallets.code, wallets.stderr).toBe(0);
    expect(wallets.stdout).toContain('addresses  the configuration');
    expect(wallets.stdout).toContain(`EVM owner  ${a}  (1 of 2)`);
    expect(wallets.stdout).toContain(`EVM owner  ${b}  (2 of 2)`);
    expect(wallets.stdout + wallets.stderr).not.toContain(PASSWORD);

    const rows: Row[] = Array.from({ length: 8 }, (_, i) => ({
      id: `ks-${i}`,
      from: 'BASE',
      to: 'ARB',
      amount: '10.00',
      recipient: randomEvmAddress(),
    }));
    const { batchId } = await stack.enqueue(rows);
    const worker = stack.startWorker();
    const doc = await stack.waitComplete(batchId, 90_000);
    expect(doc.counts.submitted).toBe(8);

    const ledger = await stack.ledger();
    const paidBy = (owner: string) =>
      ledger.filter((e) => e.kind === 'evm' && e.from === 'BASE' && e.owner === owner);
    expect(paidBy(a).length).toBeGreaterThan(0);
    expect(paidBy(a).length).toBeLessThanOrEqual(3);
    expect(paidBy(b).length).toBeGreaterThan(0);
    expect(paidBy(a).length + paidBy(b).length).toBe(8);
    for (const t of doc.transfers) expect([a, b]).toContain(t.owner);
    expect(checkLedger(doc, ledger).problems).toEqual([]);
    expect(worker.output()).not.toContain(PASSWORD);
  });
});
