import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createKeyPairFromPrivateKeyBytes,
  getAddressFromPublicKey,
  getBase64EncodedWireTransaction,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  partiallySignTransaction,
  signBytes,
  type Address,
  type Transaction,
} from '@solana/kit';
import { createPublicClient, http, parseAbi } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { USDC_EVM } from '../../src/domain/chains.ts';
import { createSandbox, type Sandbox } from '../../src/sandbox/sandbox.ts';
import { MALICIOUS_SOLANA_KINDS } from '../../src/sandbox/solana-transaction.ts';
import {
  OTHER_EVM_KEY,
  sandboxAdmin,
  signTestPermit,
  TEST_EVM_ADDRESS,
  TEST_EVM_KEY,
} from '../helpers/sandbox.ts';

/** The compiled v0 message, typed for the fields these tests read. */
type V0Message = {
  version: number;
  staticAccounts: string[];
  instructions: { programAddressIndex: number; accountIndices?: number[]; data?: Uint8Array }[];
  addressTableLookups?: unknown[];
};
const decodeMessage = (
  bytes: Parameters<ReturnType<typeof getCompiledTransactionMessageDecoder>['decode']>[0],
) => getCompiledTransactionMessageDecoder().decode(bytes) as unknown as V0Message;

const API_KEY = 'sk_sandbox_refusals';
const RECIPIENT = '0x000000000000000000000000000000000000dEaD';
let sandbox: Sandbox;

/** What these tests read from an answer (a field is absent when the answer is of the other kind). */
type Answer = {
  error: { code: string; message: string };
  intent_id: string;
  transaction: string;
  status: string;
};

async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${sandbox.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': API_KEY, ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Answer };
}

async function transfer(
  permitOverrides: Parameters<typeof signTestPermit>[0] extends infer P ? Partial<P> : never,
  amount = '2.50',
) {
  const permit = await signTestPermit({
    chain: 'BASE',
    spender: sandbox.spender,
    value: 2_500_000n,
    nonce: sandbox.admin.expectedNonce('BASE', TEST_EVM_ADDRESS),
    ...permitOverrides,
  });
  return post('/sdk/v1/transfer', { from: 'BASE', to: 'ETH', amount, recipient: RECIPIENT, permit });
}

beforeAll(async () => {
  sandbox = await createSandbox({ apiKey: API_KEY, statusStepMs: 50 });
});
afterEach(() => sandbox.admin.reset());
afterAll(() => sandbox.close());

describe('the sandbox verifies permits for real', () => {
  it('uses the fixed test key vector', () => {
    expect(privateKeyToAccount(TEST_EVM_KEY).address).toBe(TEST_EVM_ADDRESS);
  });

  it('accepts a correct permit and moves the owner’s nonce', async () => {
    const r = await transfer({});
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'pending' });
    expect(sandbox.admin.expectedNonce('BASE', TEST_EVM_ADDRESS)).toBe(1n);
  });

  it('accepts v, r, s without signature, and refuses them when they disagree with signature', async () => {
    const p = await signTestPermit({ chain: 'BASE', spender: sandbox.spender, value: 1_000_000n, nonce: 0n });
    const { signature: _sig, ...vrs } = p;
    const ok = await post('/sdk/v1/transfer', {
      from: 'BASE',
      to: 'ETH',
      amount: '1',
      recipient: RECIPIENT,
      permit: vrs,
    });
    expect(ok.status).toBe(200);
    const q = await signTestPermit({ chain: 'BASE', spender: sandbox.spender, value: 1_000_000n, nonce: 1n });
    const mixed = await post('/sdk/v1/transfer', {
      from: 'BASE',
      to: 'ETH',
      amount: '1',
      recipient: RECIPIENT,
      permit: { ...q, r: p.r },
    });
    expect(mixed.body.error.code).toBe('permit_signature_mismatch');
  });

  const refusals: [
    string,
    Parameters<typeof signTestPermit>[0] extends infer P ? Partial<P> : never,
    string,
  ][] = [
    [
      'a permit signed by another key',
      { key: OTHER_EVM_KEY, owner: TEST_EVM_ADDRESS },
      'permit_invalid_signature',
    ],
    ['a wrong value', { value: 2_500_001n }, 'permit_value_mismatch'],
    ['a wrong spender', { spender: '0x1111111111111111111111111111111111111111' }, 'permit_spender_mismatch'],
    ['an expired deadline', { deadline: BigInt(Math.floor(Date.now() / 1000) - 1) }, 'permit_expired'],
    ['a skipped nonce', { nonce: 1n }, 'permit_nonce_invalid'],
    ['a permit for another chain', { chain: 'ARB' }, 'permit_invalid_signature'],
    ['a permit under the mainnet domain', { network: 'mainnet' }, 'permit_invalid_signature'],
  ];
  for (const [what, overrides, code] of refusals) {
    it(`refuses ${what}`, async () => {
      const r = await transfer(overrides);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe(code);
      expect(sandbox.ledger()).toHaveLength(0);
      expect(sandbox.admin.expectedNonce('BASE', TEST_EVM_ADDRESS)).toBe(0n);
    });
  }

  it('refuses a reused nonce', async () => {
    const p = await signTestPermit({ chain: 'BASE', spender: sandbox.spender, value: 2_500_000n, nonce: 0n });
    const body = { from: 'BASE', to: 'ETH', amount: '2.5', recipient: RECIPIENT, permit: p };
    expect((await post('/sdk/v1/transfer', body)).status).toBe(200);
    const again = await post('/sdk/v1/transfer', body);
    expect([again.status, again.body.error.code]).toEqual([400, 'permit_nonce_used']);
    expect(sandbox.ledger()).toHaveLength(1);
  });

  it('replays an Idempotency-Key it has seen without paying again', async () => {
    const p = await signTestPermit({ chain: 'BASE', spender: sandbox.spender, value: 2_500_000n, nonce: 0n });
    const body = { from: 'BASE', to: 'ETH', amount: '2.5', recipient: RECIPIENT, permit: p };
    const a = await post('/sdk/v1/transfer', body, { 'idempotency-key': 'k1' });
    const b = await post('/sdk/v1/transfer', body, { 'idempotency-key': 'k1' });
    expect(b).toEqual(a);
    const c = await post('/sdk/v1/transfer', { ...body, amount: '2.50' }, { 'idempotency-key': 'k1' });
    expect(c.status).toBe(422);
    expect(sandbox.ledger()).toHaveLength(1);
  });

  it('refuses a missing or wrong API key', async () => {
    const none = await fetch(`${sandbox.url}/sdk/v1/estimate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ from: 'ETH', to: 'BASE', amount: '10' }),
    });
    expect(none.status).toBe(401);
    const wrong = await post(
      '/sdk/v1/estimate',
      { from: 'ETH', to: 'BASE', amount: '10' },
      { 'x-api-key': 'sk_nope' },
    );
    expect(wrong.status).toBe(401);
  });

  it('enforces chain roles, amounts and recipients', async () => {
    const bad = async (path: string, body: unknown, code: string) => {
      const r = await post(path, body);
      expect([r.status, r.body.error?.code]).toEqual([400, code]);
    };
    await bad(
      '/sdk/v1/transfer',
      { from: 'SOLANA', to: 'ETH', amount: '1', recipient: RECIPIENT, permit: {} },
      'invalid_chain',
    );
    await bad(
      '/sdk/v1/solana/build-tx',
      { to: 'SOLANA', amount: '1', from_wallet: 'x', recipient: RECIPIENT },
      'invalid_chain',
    );
    await bad('/sdk/v1/estimate', { from: 'SOLANA', to: 'SOLANA', amount: '1' }, 'invalid_route');
    await bad('/sdk/v1/estimate', { from: 'ETH', to: 'BASE', amount: 10 }, 'invalid_amount');
    await bad('/sdk/v1/estimate', { from: 'ETH', to: 'BASE', amount: '1.0000001' }, 'invalid_amount');
    await bad('/sdk/v1/estimate', { from: 'ETH', to: 'BASE', amount: '0' }, 'invalid_amount');
    await bad('/sdk/v1/estimate', { from: 'ETH', to: 'BASE', amount: '0.03' }, 'amount_below_fee');
    const p = await signTestPermit({ chain: 'BASE', spender: sandbox.spender, value: 1_000_000n, nonce: 0n });
    await bad(
      '/sdk/v1/transfer',
      {
        from: 'BASE',
        to: 'ETH',
        amount: '1',
        recipient: '0x000000000000000000000000000000000000dead'.replace('dead', 'dEAd'),
        permit: p,
      },
      'invalid_recipient',
    );
    await bad(
      '/sdk/v1/transfer',
      { from: 'BASE', to: 'SOLANA', amount: '1', recipient: RECIPIENT, permit: p },
      'invalid_recipient',
    );
  });
});

describe('the sandbox Solana flow', () => {
  let wallet: string;
  let kp: Awaited<ReturnType<typeof createKeyPairFromPrivateKeyBytes>>;
  beforeAll(async () => {
    kp = await createKeyPairFromPrivateKeyBytes(new Uint8Array(32).fill(5));
    wallet = await getAddressFromPublicKey(kp.publicKey);
  });
  const build = async () => {
    const r = await post('/sdk/v1/solana/build-tx', {
      to: 'BASE',
      amount: '3.00',
      from_wallet: wallet,
      recipient: RECIPIENT,
    });
    expect(r.status).toBe(200);
    return {
      intentId: r.body.intent_id as string,
      tx: getTransactionDecoder().decode(Buffer.from(r.body.transaction, 'base64')),
    };
  };
  const sign = async (tx: Transaction, key = kp) =>
    getBase64EncodedWireTransaction(await partiallySignTransaction([key], tx));
  const submit = (intent_id: string, signed_transaction: string) =>
    post('/sdk/v1/solana/submit', { intent_id, signed_transaction });

  it('builds a v0 transaction the sandbox has signed as fee payer, leaving only the wallet to sign', async () => {
    const { tx } = await build();
    const msg = decodeMessage(tx.messageBytes);
    expect(msg.version).toBe(0);
    expect(msg.staticAccounts[0]).toBe(sandbox.solanaFeePayer);
    expect(tx.signatures[sandbox.solanaFeePayer as Address]).not.toBeNull();
    expect(tx.signatures[wallet as Address]).toBeNull();
  });

  it('accepts the signed transaction once and answers a resubmission with the same result', async () => {
    const { intentId, tx } = await build();
    const signed = await sign(tx);
    const a = await submit(intentId, signed);
    const b = await submit(intentId, signed);
    expect(a.status).toBe(200);
    expect(b).toEqual(a);
    expect(sandbox.ledger()).toMatchObject([
      { kind: 'solana', owner: wallet, amount: '3000000', solana_tx_kind: 'legit' },
    ]);
  });

  it('refuses an unsigned transaction', async () => {
    const { intentId, tx } = await build();
    const r = await submit(intentId, getBase64EncodedWireTransaction(tx));
    expect([r.status, r.body.error.code]).toEqual([400, 'missing_signature']);
  });

  it('refuses a transaction signed by another key', async () => {
    const { intentId, tx } = await build();
    const other = await createKeyPairFromPrivateKeyBytes(new Uint8Array(32).fill(6));
    const forged = {
      ...tx,
      signatures: { ...tx.signatures, [wallet]: await signBytes(other.privateKey, tx.messageBytes) },
    } as Transaction;
    const r = await submit(intentId, getBase64EncodedWireTransaction(forged));
    expect([r.status, r.body.error.code]).toEqual([400, 'invalid_signature']);
  });

  it('refuses a corrupted wallet signature', async () => {
    const { intentId, tx } = await build();
    const signed = Buffer.from(await sign(tx), 'base64');
    signed.writeUInt8(signed.readUInt8(1 + 64 + 3) ^ 0xff, 1 + 64 + 3); // the second signature on the wire is the wallet's
    const r = await submit(intentId, signed.toString('base64'));
    expect([r.status, r.body.error.code]).toEqual([400, 'invalid_signature']);
    expect(sandbox.ledger()).toHaveLength(0);
  });

  it('refuses a tampered message', async () => {
    const { intentId, tx } = await build();
    const signed = Buffer.from(await sign(tx), 'base64');
    signed.writeUInt8(signed.readUInt8(signed.length - 2) ^ 0x01, signed.length - 2); // inside the memo
    const r = await submit(intentId, signed.toString('base64'));
    expect([r.status, r.body.error.code]).toEqual([400, 'transaction_modified']);
    expect(sandbox.ledger()).toHaveLength(0);
  });

  it('refuses an expired intent and reports it failed', async () => {
    sandbox.admin.configure({ solanaExpiryMs: 0 });
    const { intentId, tx } = await build();
    await new Promise((r) => setTimeout(r, 5));
    const r = await submit(intentId, await sign(tx));
    expect([r.status, r.body.error.code]).toEqual([400, 'intent_expired']);
    const st = await fetch(`${sandbox.url}/sdk/v1/status/${intentId}`, { headers: { 'x-api-key': API_KEY } });
    expect(await st.json()).toEqual({ intent_id: intentId, status: 'failed' });
  });

  it('hands out each malicious kind on demand', async () => {
    for (const kind of MALICIOUS_SOLANA_KINDS) {
      sandbox.admin.configure({ solanaTxKind: kind });
      const { tx } = await build();
      const msg = decodeMessage(tx.messageBytes);
      if (kind === 'wallet_fee_payer') expect(msg.staticAccounts[0]).toBe(wallet);
      else expect(msg.staticAccounts[0]).toBe(sandbox.solanaFeePayer);
      if (kind === 'address_lookup_table') expect(msg.addressTableLookups?.length).toBe(1);
    }
  });
});

describe('the sandbox JSON-RPC and status route', () => {
  const usdc = USDC_EVM.testnet.BASE.usdc;
  const abi = parseAbi([
    'function nonces(address) view returns (uint256)',
    'function name() view returns (string)',
    'function version() view returns (string)',
    'function balanceOf(address) view returns (uint256)',
  ]);
  const rpc = () => createPublicClient({ transport: http(sandbox.rpcUrl('BASE')) });

  it('answers eth_chainId, name, version, nonces and balanceOf as viem reads them', async () => {
    const c = rpc();
    expect(await c.getChainId()).toBe(84532);
    expect(await c.readContract({ address: usdc, abi, functionName: 'name' })).toBe('USDC');
    expect(await c.readContract({ address: usdc, abi, functionName: 'version' })).toBe('2');
    expect(
      await c.readContract({ address: usdc, abi, functionName: 'nonces', args: [TEST_EVM_ADDRESS] }),
    ).toBe(0n);
    expect(
      await c.readContract({ address: usdc, abi, functionName: 'balanceOf', args: [TEST_EVM_ADDRESS] }),
    ).toBe(1_000_000_000_000n);
  });

  it('answers as a node rpcNonceLagMs behind: its head, blocks and eth_call state lag together', async () => {
    sandbox.admin.configure({ rpcNonceLagMs: 1_500 });
    const c = rpc();
    const read = (blockNumber?: bigint) =>
      c.readContract({
        address: usdc,
        abi,
        functionName: 'nonces',
        args: [TEST_EVM_ADDRESS],
        ...(blockNumber === undefined ? {} : { blockNumber }),
      });
    const before = await c.getBlock();
    expect(Number(before.timestamp)).toBeLessThanOrEqual((Date.now() - 1_500) / 1000);
    expect(await c.getBlockNumber()).toBe(before.number);
    expect((await transfer({})).status).toBe(200);
    const acceptedAt = Date.now();
    // The service took the permit; the node has not seen a block with it yet.
    expect(await read()).toBe(0n);
    // A block the node has not seen: no header, and no state to read at it.
    const future = before.number + 100n;
    expect(
      await c.request({ method: 'eth_getBlockByNumber', params: [`0x${future.toString(16)}`, false] }),
    ).toBe(null);
    await expect(read(future)).rejects.toThrow(/header not found/);
    // Once the head's block is as new as the acceptance, the head shows it; the older block still does not.
    let head = await c.getBlock();
    while (Number(head.timestamp) * 1000 < acceptedAt + 1_000) {
      await new Promise((r) => setTimeout(r, 100));
      head = await c.getBlock();
    }
    expect(Date.now() - acceptedAt).toBeGreaterThanOrEqual(1_500);
    expect(await read()).toBe(1n);
    expect(await read(head.number)).toBe(1n);
    expect(await read(before.number)).toBe(0n);
    expect(head.hash).toMatch(/^0x[0-9a-f]{64}$/);
  });

  it('uses nonces as an outside signer would: refused by the service at once, shown by the RPC after its lag', async () => {
    sandbox.admin.configure({ rpcNonceLagMs: 400 });
    const admin = sandboxAdmin(sandbox.url);
    expect((await transfer({})).status).toBe(200);
    const used = await admin.outsidePermit('BASE', TEST_EVM_ADDRESS, 2);
    expect(used.used).toEqual([1n, 2n]);
    expect(used.expected).toBe(3n);
    expect(used.chain).toBeLessThan(3n);
    const stale = await transfer({ nonce: 1n });
    expect(stale.body.error.code).toBe('permit_nonce_used');
    const ahead = await transfer({ nonce: 4n });
    expect(ahead.body.error.code).toBe('permit_nonce_invalid');
    const c = rpc();
    const read = () =>
      c.readContract({ address: usdc, abi, functionName: 'nonces', args: [TEST_EVM_ADDRESS] });
    for (let i = 0; i < 40 && (await read()) < 3n; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await read()).toBe(3n);
    // An external bump still moves both views at once.
    expect(await admin.bumpNonce('BASE', TEST_EVM_ADDRESS, 2)).toEqual({ expected: 5n, chain: 5n });
    expect((await transfer({ nonce: 5n })).status).toBe(200);
  });

  it('moves an intent pending → detected → minted → complete, and 404s when told to', async () => {
    const r = await transfer({});
    const id = r.body.intent_id as string;
    const seen: string[] = [];
    for (let i = 0; i < 40; i++) {
      const s = (await (
        await fetch(`${sandbox.url}/sdk/v1/status/${id}`, { headers: { 'x-api-key': API_KEY } })
      ).json()) as {
        status: string;
      };
      if (seen.at(-1) !== s.status) seen.push(s.status);
      if (s.status === 'complete') break;
      await new Promise((res) => setTimeout(res, 20));
    }
    expect(seen).toEqual(['pending', 'detected', 'minted', 'complete']);
    sandbox.admin.configure({ statusRoute: false });
    expect(
      (await fetch(`${sandbox.url}/sdk/v1/status/${id}`, { headers: { 'x-api-key': API_KEY } })).status,
    ).toBe(404);
  });
});
