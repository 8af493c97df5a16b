import diagnostics from 'node:diagnostics_channel';
import type { ClientRequest } from 'node:http';
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
import { waitFor } from '../helpers/cli.ts';
import { OTHER_EVM_KEY, signTestPermit, TEST_EVM_ADDRESS, TEST_EVM_KEY } from '../helpers/sandbox.ts';

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
    nonce: (await sandbox.admin.nonce('BASE', TEST_EVM_ADDRESS)).expected,
    ...permitOverrides,
  });
  return post('/sdk/v1/transfer', { from: 'BASE', to: 'ETH', amount, recipient: RECIPIENT, permit });
}

beforeAll(async () => {
  sandbox = await createSandbox({ apiKey: API_KEY, statusStepMs: 50 });
});
afterEach(async () => {
  await sandbox.admin.reset();
});
afterAll(() => sandbox.close());

describe('the sandbox verifies permits for real', () => {
  it('uses the fixed test key vector', () => {
    expect(privateKeyToAccount(TEST_EVM_KEY).address).toBe(TEST_EVM_ADDRESS);
  });

  it('accepts a correct permit and moves the owner’s nonce', async () => {
    const r = await transfer({});
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'pending' });
    expect((await sandbox.admin.nonce('BASE', TEST_EVM_ADDRESS)).expected).toBe(1n);
  });

  it('executes a permit in three requests to its chain: the simulation and the balance in one batch, then each transaction with its receipt', async () => {
    await transfer({}); // the owner met (funded) first: a first meeting mints and gives gas
    const anvil = new URL(sandbox.nodes.evm.BASE.url as string);
    const sent: string[][] = [];
    const seen = ({ request }: { request: ClientRequest }) => {
      if (request.getHeader('host') !== anvil.host) return;
      const end = request.end.bind(request) as (body: string) => ClientRequest;
      (request as unknown as { end: (body: string) => ClientRequest }).end = (body: string) => {
        const calls = [JSON.parse(body) as { method: string } | { method: string }[]].flat();
        // The block ticker's empty blocks (a second without one) are not the transfer's.
        if (!calls.some((c) => c.method === 'evm_mine' || c.method === 'eth_blockNumber'))
          sent.push(calls.map((c) => c.method));
        return end(body);
      };
    };
    const permit = await signTestPermit({
      chain: 'BASE',
      spender: sandbox.spender,
      value: 2_500_000n,
      nonce: (await sandbox.admin.nonce('BASE', TEST_EVM_ADDRESS)).expected,
    });
    diagnostics.subscribe('http.client.request.created', seen as (m: unknown) => void);
    try {
      const r = await post('/sdk/v1/transfer', {
        from: 'BASE',
        to: 'ETH',
        amount: '2.50',
        recipient: RECIPIENT,
        permit,
      });
      expect(r.status).toBe(200);
    } finally {
      diagnostics.unsubscribe('http.client.request.created', seen as (m: unknown) => void);
    }
    expect(sent).toEqual([
      ['eth_call', 'eth_call'],
      ['eth_sendRawTransactionSync'],
      ['eth_sendRawTransactionSync'],
    ]);
  });

  it('executes a valid permit on anvil: exactly the amount leaves the owner, the recipient gets the net amount at minted', async () => {
    const recipient = '0x00000000000000000000000000000000000b0b01';
    const permit = await signTestPermit({
      chain: 'BASE',
      spender: sandbox.spender,
      value: 2_500_000n,
      nonce: 0n,
    });
    const sentAt = Date.now();
    const r = await post('/sdk/v1/transfer', { from: 'BASE', to: 'ETH', amount: '2.50', recipient, permit });
    const answeredAt = Date.now();
    expect(r.status).toBe(200);
    const txHash = (r.body as unknown as { tx_hash: string }).tx_hash;
    // The hash is a real transaction on the BASE chain: the transferFrom, mined and successful.
    const receipt = await fetch(sandbox.nodes.evm.BASE.url as string, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getTransactionReceipt', params: [txHash] }),
    });
    expect(((await receipt.json()) as { result: { status: string } }).result.status).toBe('0x1');
    const onChain = async (chain: string, address: string) =>
      BigInt((await sandbox.admin.balances([address])).find((b) => b.chain === chain)?.base_units ?? '-1');
    // Funded with 1,000,000 USDC when the sandbox first met the owner, then 2.5 moved.
    expect(await onChain('BASE', TEST_EVM_ADDRESS)).toBe(1_000_000_000_000n - 2_500_000n);
    expect(await onChain('BASE', sandbox.depositAddress)).toBe(2_500_000n);
    // Fee: 10 bps (0.0025) + gas BASE 0.005 + ETH 0.03 → the recipient is paid 2.4625 on ETH at `minted`.
    const id = r.body.intent_id;
    for (let i = 0; i < 100; i++) {
      const st = await fetch(`${sandbox.url}/sdk/v1/status/${id}`, { headers: { 'x-api-key': API_KEY } });
      if (((await st.json()) as { status: string }).status === 'minted') break;
      await new Promise((res) => setTimeout(res, 10));
    }
    expect(await onChain('ETH', recipient)).toBe(2_462_500n);
    expect(sandbox.ledger()[0]).toMatchObject({ tx_hash: txHash, net_amount: '2462500' });
    // When the request arrived and when it was answered (the bench splits an owner's cycle by them).
    const entry = sandbox.ledger()[0];
    expect(entry?.received_at).toBeGreaterThanOrEqual(sentAt);
    expect(entry?.at).toBeGreaterThanOrEqual(entry?.received_at ?? Infinity);
    expect(entry?.at).toBeLessThanOrEqual(answeredAt);
    expect(sandbox.ledger()[0]?.destination_tx).toMatch(/^0x[0-9a-f]{64}$/);
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
      expect((await sandbox.admin.nonce('BASE', TEST_EVM_ADDRESS)).expected).toBe(0n);
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
    expect(c.body.error.code).toBe('idempotency_key_reused');
    expect(sandbox.ledger()).toHaveLength(1);
  });

  it('answers a re-send that arrives while the first send of its key is still executing with the first one’s answer', async () => {
    // A client that gave up waiting (its timeout, on a loaded machine) sends the same payload again
    // while the service still executes the first: the sandbox never runs the payment twice side by
    // side, so the re-send is not refused as a used nonce.
    sandbox.admin.configure({ latencyMs: 300 });
    const p = await signTestPermit({ chain: 'BASE', spender: sandbox.spender, value: 2_500_000n, nonce: 0n });
    const body = { from: 'BASE', to: 'ETH', amount: '2.5', recipient: RECIPIENT, permit: p };
    const first = post('/sdk/v1/transfer', body, { 'idempotency-key': 'k2' });
    // The second arrives once the first is past its latency and executing (or done).
    await waitFor('the first send to be executing', async () => sandbox.admin.requests().length >= 1, {
      intervalMs: 5,
    });
    const [a, b] = await Promise.all([first, post('/sdk/v1/transfer', body, { 'idempotency-key': 'k2' })]);
    expect(a.status).toBe(200);
    expect(b).toEqual(a);
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

  it('executes the submitted transaction in LiteSVM: exactly the amount moves, our wallet pays no SOL, a replay moves nothing', async () => {
    const { intentId, tx } = await build();
    const usdcOf = async (address: string) => {
      const [row] = await sandbox.admin.balances([address]);
      return { usdc: BigInt(row?.base_units ?? '-1'), lamports: BigInt(row?.lamports ?? '-1') };
    };
    const before = await usdcOf(wallet);
    expect(before).toEqual({ usdc: 1_000_000_000_000n, lamports: 0n }); // funded on first meeting, no SOL
    const signed = await sign(tx);
    const first = await submit(intentId, signed);
    expect(first.status).toBe(200);
    expect(await usdcOf(wallet)).toEqual({ usdc: before.usdc - 3_000_000n, lamports: 0n });
    expect((await usdcOf(sandbox.solanaFeePayer)).usdc).toBe(3_000_000n);
    // The same signed transaction again: the runtime refuses to run it twice; the service answers as the first time.
    expect(await submit(intentId, signed)).toEqual(first);
    expect((await usdcOf(wallet)).usdc).toBe(before.usdc - 3_000_000n);
    expect(sandbox.ledger()).toHaveLength(1);
  });

  it('never executes a transaction twice, however many others ran since (LiteSVM remembers only its last 32)', async () => {
    const { intentId, tx } = await build();
    const signed = await sign(tx);
    const first = await submit(intentId, signed);
    expect(first.status).toBe(200);
    const usdc = async () => (await sandbox.admin.balances([wallet]))[0]?.base_units;
    const paidOnce = await usdc();
    // 40 transactions of the sandbox's own (mints, each with a memo of its own): more than LiteSVM's
    // transaction history holds, so the runtime alone would no longer know the first one.
    const other = await createKeyPairFromPrivateKeyBytes(new Uint8Array(32).fill(8));
    const otherWallet = await getAddressFromPublicKey(other.publicKey);
    for (let i = 1; i <= 40; i++) await sandbox.admin.setBalance('SOLANA', otherWallet, BigInt(i));
    // The worker's re-send after a lost answer: the same bytes, answered as the first time.
    expect(await submit(intentId, signed)).toEqual(first);
    expect(await usdc()).toBe(paidOnce);
    expect(sandbox.ledger()).toHaveLength(1);
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

  /** One JSON-RPC call through the sandbox's `/rpc/BASE` (or straight to anvil with `direct`). */
  const call = async (method: string, params: unknown[] = [], direct = false) => {
    const url = direct ? (sandbox.nodes.evm.BASE.url as string) : sandbox.rpcUrl('BASE');
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    return (await res.json()) as { result?: unknown; error?: { code: number; message: string } };
  };
  const nonceCall = (owner: string) => ({
    to: usdc,
    data: `0x7ecebe00${owner.slice(2).toLowerCase().padStart(64, '0')}`,
  });

  // The lags below are seconds, not a few hundred ms: the reads "within the lag" must all happen
  // before it ends, even on a busy machine; the end of the lag is then waited for as it is seen.
  const LAG_MS = 5_000;

  it('answers as a node rpcNonceLagMs behind: block number, headers and state of the lagged head', async () => {
    await sandbox.admin.nonce('BASE', TEST_EVM_ADDRESS); // settles nothing: a read
    sandbox.admin.configure({ rpcNonceLagMs: LAG_MS });
    const before = BigInt((await call('eth_blockNumber', [], true)).result as string);
    expect((await transfer({})).status).toBe(200);
    const head = BigInt((await call('eth_blockNumber', [], true)).result as string);
    expect(head).toBeGreaterThan(before);
    // Within the lag: the RPC's head is a block before the transfer's (the one before it, or an
    // older one when the block ticker mined `before` less than the lag ago), and so is everything
    // it reads.
    const lagged = BigInt((await call('eth_blockNumber')).result as string);
    expect(lagged).toBeLessThanOrEqual(before);
    const latest = (await call('eth_getBlockByNumber', ['latest', false])).result as Record<string, string>;
    expect(BigInt(latest['number'] as string)).toBe(lagged);
    expect(latest['hash']).toMatch(/^0x[0-9a-f]{64}$/);
    expect(Number(latest['timestamp'])).toBeGreaterThan(0);
    expect((await call('eth_getBlockByNumber', [`0x${head.toString(16)}`, false])).result).toBeNull();
    expect((await call('eth_call', [nonceCall(TEST_EVM_ADDRESS), `0x${head.toString(16)}`])).error).toEqual({
      code: -32000,
      message: 'header not found',
    });
    expect(BigInt((await call('eth_call', [nonceCall(TEST_EVM_ADDRESS), 'latest'])).result as string)).toBe(
      0n,
    );
    expect(BigInt((await call('eth_call', [nonceCall(TEST_EVM_ADDRESS), 'pending'])).result as string)).toBe(
      0n,
    );
    // The service itself uses the chain as it is: the used nonce is refused at once.
    expect((await transfer({ nonce: 0n })).body.error.code).toBe('permit_nonce_used');
    // Once the lag has passed the transfer's block is the RPC's: its header and its state. (The
    // block ticker mines an empty block each second, so the head may be past it by then.)
    await waitFor(
      'the transfer block to show on the lagged RPC',
      async () => (await call('eth_getBlockByNumber', [`0x${head.toString(16)}`, false])).result !== null,
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    expect(BigInt((await call('eth_blockNumber')).result as string)).toBeGreaterThanOrEqual(head);
    expect(
      BigInt(
        (await call('eth_call', [nonceCall(TEST_EVM_ADDRESS), `0x${head.toString(16)}`])).result as string,
      ),
    ).toBe(1n);
    expect(BigInt((await call('eth_call', [nonceCall(TEST_EVM_ADDRESS), 'latest'])).result as string)).toBe(
      1n,
    );
    // An explicit older block reads the state as of that block (anvil keeps the history).
    const old = `0x${before.toString(16)}`;
    expect(BigInt((await call('eth_call', [nonceCall(TEST_EVM_ADDRESS), old])).result as string)).toBe(0n);
  });

  it('stamps blocks with the wall clock after a reset, as a live chain does', async () => {
    // anvil's evm_revert rewinds its clock to the snapshot's block (taken at start-up): without
    // setting it back, blocks after a reset would be stamped behind the wall clock by the time
    // since start-up, and no block would be past a permit's deadline when the deadline is.
    const genesis = (await call('eth_getBlockByNumber', ['earliest', false], true)).result as {
      timestamp: string;
    };
    const rewindMs = (Number(genesis.timestamp) + 2) * 1000 - Date.now();
    if (rewindMs > 0) await new Promise((r) => setTimeout(r, rewindMs));
    await sandbox.admin.reset();
    const before = Date.now();
    expect((await transfer({})).status).toBe(200);
    const after = Date.now();
    const head = (await call('eth_getBlockByNumber', ['latest', false], true)).result as {
      timestamp: string;
    };
    expect(Number(head.timestamp)).toBeGreaterThanOrEqual(Math.floor(before / 1000));
    expect(Number(head.timestamp)).toBeLessThanOrEqual(Math.floor(after / 1000));
  });

  it('takes an outside signer’s nonces at once for the service, and shows them over RPC after the lag', async () => {
    sandbox.admin.configure({ rpcNonceLagMs: LAG_MS });
    const c = rpc();
    const read = () =>
      c.readContract({ address: usdc, abi, functionName: 'nonces', args: [TEST_EVM_ADDRESS] });
    const outside = await sandbox.admin.outsidePermit('BASE', TEST_EVM_ADDRESS, 2);
    expect(outside).toEqual({ used: [0n, 1n], expected: 2n, chain: 0n });
    expect(await read()).toBe(0n);
    expect((await transfer({ nonce: 1n })).body.error.code).toBe('permit_nonce_used');
    expect((await transfer({ nonce: 3n })).body.error.code).toBe('permit_nonce_invalid');
    // After the lag, the RPC shows both used: waited for as it is seen, not for a fixed time.
    await waitFor('the outside nonces to show on the lagged RPC', async () => (await read()) === 2n, {
      timeoutMs: 60_000,
      intervalMs: 100,
    });
    expect(await read()).toBe(2n);
    expect(await sandbox.admin.bumpNonce('BASE', TEST_EVM_ADDRESS)).toEqual({ expected: 3n, chain: 2n });
    expect((await transfer({ nonce: 3n })).status).toBe(200);
  });

  it('forwards other methods to anvil and refuses anvil_, evm_, hardhat_ and debug_ ones', async () => {
    expect((await call('eth_chainId')).result).toBe('0x14a34');
    expect((await call('eth_getCode', [usdc, 'latest'])).result).toMatch(/^0x[0-9a-f]{200,}$/);
    expect((await call('eth_getBalance', [TEST_EVM_ADDRESS, 'latest'])).result).toBe('0x0');
    for (const method of ['anvil_setBalance', 'evm_mine', 'hardhat_impersonateAccount', 'debug_traceCall']) {
      expect((await call(method, [TEST_EVM_ADDRESS, '0x1'])).error?.code).toBe(-32601);
    }
    // The refused methods did nothing: no balance was set on the chain.
    expect((await call('eth_getBalance', [TEST_EVM_ADDRESS, 'latest'], true)).result).toBe('0x0');
  });

  it('moves an intent pending → detected → minted → complete, and 404s when told to', async () => {
    // Steps of 1.5 s (the suite's 50 ms would let a busy machine's pause between two looks skip
    // one), looked at every 20 ms until complete.
    sandbox.admin.configure({ statusStepMs: 1_500 });
    const r = await transfer({});
    const id = r.body.intent_id as string;
    const seen: string[] = [];
    const until = Date.now() + 60_000;
    while (Date.now() < until) {
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

describe("the sandbox has USDC's own controls (admin routes: blacklist, freeze)", () => {
  it('blacklists an owner as FiatToken does: isBlacklisted answers through /rpc, its permit reverts, unblacklisting lifts it', async () => {
    const usdc = USDC_EVM.testnet.BASE.usdc;
    const abi = parseAbi(['function isBlacklisted(address account) view returns (bool)']);
    const client = createPublicClient({ transport: http(sandbox.rpcUrl('BASE')) });
    const listed = () =>
      client.readContract({ address: usdc, abi, functionName: 'isBlacklisted', args: [TEST_EVM_ADDRESS] });
    expect(await listed()).toBe(false);
    await sandbox.admin.setBlacklisted('BASE', TEST_EVM_ADDRESS, true);
    expect(await listed()).toBe(true);
    const refused = await transfer({});
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toContain('Blacklistable: account is blacklisted');
    expect(sandbox.ledger()).toEqual([]);
    await sandbox.admin.setBlacklisted('BASE', TEST_EVM_ADDRESS, false);
    expect(await listed()).toBe(false);
    expect((await transfer({})).status).toBe(200);
  });

  it("freezes a Solana wallet's USDC account: getAccountInfo shows it frozen (jsonParsed and base64), an account not made yet is null", async () => {
    const wallet = await getAddressFromPublicKey(
      (await createKeyPairFromPrivateKeyBytes(new Uint8Array(32).fill(7))).publicKey,
    );
    const info = async (account: string, encoding: string) => {
      const res = await fetch(sandbox.rpcUrl('SOLANA'), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'getAccountInfo',
          params: [account, { encoding }],
        }),
      });
      return ((await res.json()) as { result: { value: unknown } }).result.value as {
        data: { parsed: { info: { state: string } } } | [string, string];
      } | null;
    };
    const account = await sandbox.admin.setFrozen(wallet, true);
    const parsed = await info(account, 'jsonParsed');
    expect(parsed?.data).toMatchObject({
      program: 'spl-token',
      parsed: { type: 'account', info: { state: 'frozen' } },
    });
    const raw = (await info(account, 'base64'))?.data as [string, string];
    expect(Buffer.from(raw[0], 'base64')[108]).toBe(2);
    await sandbox.admin.setFrozen(wallet, false);
    expect(await info(account, 'jsonParsed')).toMatchObject({
      data: { parsed: { info: { state: 'initialized' } } },
    });
    // A wallet the sandbox never met has no USDC account yet.
    const other = await getAddressFromPublicKey(
      (await createKeyPairFromPrivateKeyBytes(new Uint8Array(32).fill(8))).publicKey,
    );
    expect(await info(other, 'jsonParsed')).toBeNull();
  });
});
