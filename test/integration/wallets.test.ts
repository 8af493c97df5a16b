import { createPrivateKey, createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { address, getAddressDecoder } from '@solana/kit';
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SOLANA_USDC_MINT } from '../../src/domain/chains.ts';
import { encodeBase58 } from '../../src/domain/base58.ts';
import { formatNative } from '../../src/domain/owner-gas.ts';
import type { WalletsReport } from '../../src/ops/wallets.ts';
import { runCli } from '../helpers/cli.ts';
import { startStack, type Stack } from '../helpers/e2e.ts';
import { randomEvmAddress, TEST_EVM_KEY } from '../helpers/fixtures.ts';
import { freePort } from '../helpers/redis.ts';

/** A real HTTP Solana JSON-RPC endpoint knowing one token account's balance. */
async function fakeSolanaRpc(
  account: string,
  amount: string,
): Promise<{ url: string; calls: string[]; close(): Promise<void> }> {
  const calls: string[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const r = JSON.parse(body) as { id: unknown; method: string; params: unknown[] };
      calls.push(r.method);
      const reply =
        r.method !== 'getTokenAccountBalance'
          ? { jsonrpc: '2.0', id: r.id, error: { code: -32601, message: 'Method not found' } }
          : r.params[0] === account
            ? {
                jsonrpc: '2.0',
                id: r.id,
                result: { context: { slot: 1 }, value: { amount, decimals: 6, uiAmountString: '' } },
              }
            : {
                jsonrpc: '2.0',
                id: r.id,
                error: { code: -32602, message: 'Invalid param: could not find account' },
              };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    calls,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The Solana address of a solana-keygen file, derived from its secret seed (not read from the file's public half). */
function solanaAddressOf(file: string): { address: string; secret: Uint8Array } {
  const bytes = Uint8Array.from(JSON.parse(readFileSync(file, 'utf8')) as number[]);
  const seed = bytes.subarray(0, 32);
  const pkcs8 = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]);
  const pub = createPublicKey(createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' }))
    .export({ format: 'der', type: 'spki' })
    .subarray(-32);
  return { address: encodeBase58(Uint8Array.from(pub)), secret: bytes };
}

describe('wallets: public addresses, permit nonces and balances through the real CLI', () => {
  let stack: Stack;
  let solanaRpc: Awaited<ReturnType<typeof fakeSolanaRpc>>;
  let solana: { address: string; secret: Uint8Array };
  let ata: string;
  const owner = privateKeyToAccount(TEST_EVM_KEY as `0x${string}`).address;

  beforeAll(async () => {
    stack = await startStack();
    solana = solanaAddressOf(stack.env['SOLANA_KEYPAIR_FILE'] as string);
    [ata] = await findAssociatedTokenPda({
      owner: address(solana.address),
      mint: address(SOLANA_USDC_MINT.testnet),
      tokenProgram: TOKEN_PROGRAM_ADDRESS,
    });
    solanaRpc = await fakeSolanaRpc(ata, '123456789');
  });
  afterAll(async () => {
    await solanaRpc?.close();
    await stack?.stop();
  });

  it('shows the addresses, the nonces of accepted permits, balances and the nonce pool, and no secret', async () => {
    // Three permits accepted: two on BASE, one on ARB.
    const { code, batchId } = await stack.enqueue([
      { id: 'w1', from: 'BASE', to: 'ARB', amount: '10.00', recipient: randomEvmAddress() },
      { id: 'w2', from: 'BASE', to: 'ETH', amount: '20.50', recipient: randomEvmAddress() },
      { id: 'w3', from: 'ARB', to: 'POLYGON', amount: '30.25', recipient: randomEvmAddress() },
    ]);
    expect(code).toBe(0);
    const worker = stack.startWorker();
    const doc = await stack.waitComplete(batchId, 60_000);
    expect(doc.counts.submitted).toBe(3);
    await worker.stop(10_000);

    // Issue 33: `wallets` reads no key. With the key settings of compose's `.env` as the host sees
    // them (container paths that do not exist here), it shows what the worker published.
    const env = {
      ...stack.env,
      SOLANA_RPC_URL: solanaRpc.url,
      EVM_PRIVATE_KEY: '',
      EVM_PRIVATE_KEY_FILE: '/secrets/treasury.keys',
      SOLANA_KEYPAIR_FILE: '/secrets/solana-keypair.json',
    };
    // An owner without the gas of its next transactions on ETH is shown LOW (restored after).
    const ethWei = await stack.sandbox.admin.nativeBalance('ETH', owner);
    await stack.sandbox.admin.setNativeBalance('ETH', owner, 1000n);
    const res = await runCli(['wallets'], env).finally(() =>
      stack.sandbox.admin.setNativeBalance('ETH', owner, ethWei),
    );
    expect(res.code, res.stderr).toBe(0);
    const text = res.stdout;
    expect(text).toContain('addresses  published by the workers');
    expect(text).toContain(`EVM owner  ${owner}`);
    expect(text).toContain(`Solana wallet        ${solana.address}`);
    expect(text).toContain(`Solana USDC account  ${ata}`);
    expect(text).toContain('Solana USDC balance  123.456789');
    expect(solanaRpc.calls).toContain('getTokenAccountBalance');
    // chain, rpc, permit nonce, balance (1,000,000 minus what the permits moved), pool next.
    const line = (chain: string) =>
      text
        .split('\n')
        .find((l) => l.startsWith(`${chain} `))
        ?.split(/\s{2,}/);
    expect(line('ETH')?.slice(0, 5)).toEqual(['ETH', 'yes', '0', '1000000.00', '0']);
    expect(line('BASE')?.slice(0, 5)).toEqual(['BASE', 'yes', '2', '999969.50', '2']);
    expect(line('ARB')?.slice(0, 5)).toEqual(['ARB', 'yes', '1', '999969.75', '1']);
    // The last column: the owner's native gas on the chain.
    expect(line('BASE')?.at(-1)).toBe(formatNative(await stack.sandbox.admin.nativeBalance('BASE', owner)));
    expect(line('ETH')?.at(-1)).toMatch(/^0\.000000000000001 LOW \(needs 0\.[0-9]+\)$/);

    for (const out of [res.stdout, res.stderr]) {
      expect(out.toLowerCase()).not.toContain(TEST_EVM_KEY.slice(2).toLowerCase());
      expect(out).not.toContain(encodeBase58(solana.secret));
      expect(out).not.toContain(encodeBase58(solana.secret.subarray(0, 32)));
      expect(out).not.toContain(Buffer.from(solana.secret.subarray(0, 32)).toString('hex'));
      expect(out).not.toContain(Buffer.from(solana.secret.subarray(0, 32)).toString('base64'));
      expect(out).not.toContain(JSON.stringify([...solana.secret.subarray(0, 8)]).slice(1, -1));
    }
    // The decoder agrees with the base58 address (a sanity check of the test's own derivation).
    expect(getAddressDecoder().decode(solana.secret.subarray(32))).toBe(solana.address);
  });

  it('reads the Solana balance from the sandbox’s own chain (LiteSVM) over its printed SOLANA_RPC_URL', async () => {
    await stack.sandbox.admin.setBalance('SOLANA', solana.address, '2500.125');
    const res = await runCli(['wallets', '--json'], {
      ...stack.env,
      SOLANA_RPC_URL: stack.sandbox.rpc.SOLANA,
    });
    expect(res.code, res.stderr).toBe(0);
    const report = JSON.parse(res.stdout) as WalletsReport;
    expect(report.solana).toMatchObject({ usdc_account: ata, usdc_balance: '2500.125', error: null });
    expect(await stack.sandbox.admin.balance('SOLANA', solana.address)).toBe(2_500_125_000n);
  });

  it('shows what cannot be read as unavailable and still answers', async () => {
    const dead = `http://127.0.0.1:${await freePort()}/`;
    // Issue 33: without Redis (where workers publish their addresses) the configuration names them.
    const res = await runCli(['wallets'], {
      ...stack.env,
      EVM_OWNER_ADDRESSES: owner,
      SOLANA_ADDRESS: solana.address,
      EVM_RPC_URL_BASE: dead,
      SOLANA_RPC_URL: dead,
      REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
      TRANSFER_API_URL: '',
      TRANSFER_API_KEY: '',
    });
    expect(res.code, res.stderr).toBe(0);
    const line = (chain: string) =>
      res.stdout
        .split('\n')
        .find((l) => l.startsWith(`${chain} `))
        ?.split(/\s{2,}/);
    expect(line('BASE')?.slice(0, 5)).toEqual(['BASE', 'yes', 'unavailable', 'unavailable', 'unavailable']);
    expect(line('ETH')?.slice(0, 3)).toEqual(['ETH', 'yes', '0']);
    expect(res.stdout).toMatch(
      /Solana USDC balance {2}unavailable \(Solana RPC http:\/\/127\.0\.0\.1:\d+: request failed/,
    );
    expect(res.stdout).toContain('Redis did not answer');
  });

  it('prints one JSON document with --json', async () => {
    // In-process, through the command module, until `wallets --json` is declared in src/cli/main.ts.
    const { run } = await import('../../src/cli/commands/wallets.ts');
    const saved = { ...process.env };
    const chunks: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    Object.assign(process.env, stack.env, { SOLANA_RPC_URL: solanaRpc.url });
    process.stdout.write = ((c: string | Uint8Array) => (
      chunks.push(String(c)),
      true
    )) as typeof process.stdout.write;
    let code: number;
    try {
      code = await run([], { json: true });
    } finally {
      process.stdout.write = write;
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
    expect(code).toBe(0);
    const report = JSON.parse(chunks.join('')) as WalletsReport;
    expect(report.evm?.address).toBe(owner);
    expect(report.evm?.chains.find((c) => c.chain === 'BASE')).toMatchObject({
      rpc: true,
      permit_nonce: '2',
      usdc_balance: '999969.50',
      nonce_pool: { next: '2', holder: null },
    });
    // The owner's native gas on each chain (it pays its own transactions on the CCTP road).
    const base = report.evm?.chains.find((c) => c.chain === 'BASE');
    const wei = await stack.sandbox.admin.nativeBalance('BASE', owner);
    expect(base?.native_gas).toBe(formatNative(wei));
    expect(base?.gas_needed).toMatch(/^0\.[0-9]+$/);
    expect(base?.gas_low).toBe(false);
    expect(report.solana).toMatchObject({
      address: solana.address,
      usdc_account: ata,
      usdc_balance: '123.456789',
    });
    expect(report.redis).toBe('ok');
    expect(report.addresses_from).toEqual({ evm: 'workers', solana: 'workers' });
    expect(chunks.join('').toLowerCase()).not.toContain(TEST_EVM_KEY.slice(2).toLowerCase());
  });
});
