import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createKeyPairFromPrivateKeyBytes,
  getAddressFromPublicKey,
  getBase64EncodedWireTransaction,
  getTransactionDecoder,
  partiallySignTransaction,
} from '@solana/kit';
import { Secret } from '../../src/config/config.ts';
import { createLogger } from '../../src/log/logger.ts';
import { createSandbox, type Sandbox } from '../../src/sandbox/sandbox.ts';
import { createPlant } from '../../src/service/create-plant.ts';
import {
  createServiceClient,
  type ClosableServiceClient,
  type CallOutcome,
} from '../../src/service/service-client.ts';
import { ServiceError } from '../../src/service/service-error.ts';
import type { FailureKind, Operation } from '../../src/service/types.ts';
import { freePort } from '../helpers/redis.ts';
import { signTestPermit, TEST_EVM_ADDRESS } from '../helpers/sandbox.ts';

const API_KEY = 'sk_test_9f8e7d6c5b4a3210';
const RECIPIENT = '0x000000000000000000000000000000000000dEaD';

let sandbox: Sandbox;
let client: ClosableServiceClient;
const logLines: string[] = [];
const calls: { op: Operation; outcome: CallOutcome }[] = [];
const errors: unknown[] = [];

async function expectFailure(p: Promise<unknown>, kind: FailureKind): Promise<ServiceError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  errors.push(err);
  expect(err).toBeInstanceOf(ServiceError);
  expect((err as ServiceError).kind).toBe(kind);
  return err as ServiceError;
}

async function permit(amount: bigint, nonce?: bigint) {
  return signTestPermit({
    chain: 'BASE',
    spender: sandbox.spender,
    value: amount,
    nonce: nonce ?? (await sandbox.admin.nonce('BASE', TEST_EVM_ADDRESS)).expected,
  });
}

beforeAll(async () => {
  sandbox = await createSandbox({ apiKey: API_KEY, statusStepMs: 100, retryAfterSeconds: 0 });
  client = createServiceClient({
    baseUrl: sandbox.url,
    apiKey: new Secret(API_KEY),
    // Generous: a busy machine can take seconds over a real transfer on anvil (the sandbox runs in
    // this process). The test of a hung service has a client with a short timeout of its own.
    connectTimeoutMs: 10_000,
    responseTimeoutMs: 20_000,
    retryMinDelayMs: 10,
    logger: createLogger('debug', { write: (line: string) => void logLines.push(line) }),
    onCall: (op, outcome) => calls.push({ op, outcome }),
  });
});

afterEach(async () => {
  await sandbox.admin.reset();
});

afterAll(async () => {
  client.close();
  await sandbox.close();
  // The API key never reaches an error message, a cause, or a log line.
  expect(errors.length).toBeGreaterThan(10);
  for (const e of errors) {
    const text = `${String(e)} ${(e as Error).message} ${JSON.stringify(e)} ${String((e as Error).cause)}`;
    expect(text).not.toContain(API_KEY);
  }
  expect(logLines.length).toBeGreaterThan(10);
  for (const line of logLines) expect(line).not.toContain(API_KEY);
});

describe('the service client against the sandbox', () => {
  it('estimates a fee in micro-USDC', async () => {
    const e = await client.estimate({ from: 'BASE', to: 'ETH', amount: 10_000_000n });
    // 0.1 % platform + BASE gas 0.005 + ETH gas 0.03
    expect(e).toEqual({
      amount: 10_000_000n,
      fee: { total: 45_000n, platform: 10_000n, gas: 35_000n },
      netReceive: 9_955_000n,
    });
  });

  it('transfers with a signed permit and follows the intent to complete', async () => {
    // Steps of 1.5 s: the intent is still pending at the first look even on a busy machine (with
    // the suite's 100 ms, a pause after the transfer could skip it).
    sandbox.admin.configure({ statusStepMs: 1_500 });
    const r = await client.transfer(
      { from: 'BASE', to: 'ARB', amount: 2_500_000n, recipient: RECIPIENT, permit: await permit(2_500_000n) },
      { idempotencyKey: 'b1/t1/1' },
    );
    expect(r.status).toBe('pending');
    expect(r.txHash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(sandbox.ledger()).toMatchObject([
      {
        kind: 'evm',
        intent_id: r.intentId,
        amount: '2500000',
        owner: TEST_EVM_ADDRESS,
        nonce: '0',
        idempotency_key: 'b1/t1/1',
      },
    ]);
    const seen = new Set<string>();
    const until = Date.now() + 60_000;
    while (!seen.has('complete') && Date.now() < until) {
      const s = await client.getIntentStatus(r.intentId);
      seen.add(s?.status ?? 'none');
      await new Promise((res) => setTimeout(res, 40));
    }
    expect([...seen]).toEqual(expect.arrayContaining(['pending', 'complete']));
  });

  it('builds, signs and submits a Solana transaction', async () => {
    const kp = await createKeyPairFromPrivateKeyBytes(new Uint8Array(32).fill(3));
    const wallet = await getAddressFromPublicKey(kp.publicKey);
    const built = await client.buildSolanaTx({
      to: 'BASE',
      amount: 1_000_000n,
      fromWallet: wallet,
      recipient: RECIPIENT,
    });
    expect(Date.parse(built.expiresAt ?? '')).toBeGreaterThan(Date.now());
    const tx = getTransactionDecoder().decode(Buffer.from(built.transaction, 'base64'));
    const signed = getBase64EncodedWireTransaction(await partiallySignTransaction([kp], tx));
    const sub = await client.submitSolanaTx(
      { intentId: built.intentId, signedTransaction: signed },
      { idempotencyKey: 's1' },
    );
    expect(sub).toMatchObject({ intentId: built.intentId, status: 'pending' });
    expect(sub.txSignature).toBeTruthy();
    const again = await client.submitSolanaTx(
      { intentId: built.intentId, signedTransaction: signed },
      { idempotencyKey: 's1' },
    );
    expect(again.txSignature).toBe(sub.txSignature);
    expect(sandbox.ledger()).toHaveLength(1);
  });

  it('answers undefined for an unknown intent and when the status route is absent', async () => {
    expect(await client.getIntentStatus('int_nope')).toBeUndefined();
    sandbox.admin.configure({ statusRoute: false });
    expect(await client.getIntentStatus('int_nope')).toBeUndefined();
  });

  it('is refused (rejected) without the right API key, and the key is not in the error', async () => {
    const bad = createServiceClient({ baseUrl: sandbox.url, apiKey: new Secret('sk_wrong_key_123456') });
    const e = await expectFailure(bad.estimate({ from: 'BASE', to: 'ETH', amount: 1_000_000n }), 'rejected');
    bad.close();
    expect(e.httpStatus).toBe(401);
    expect(e.serviceCode).toBe('unauthorized');
    expect(e.message).not.toContain('sk_wrong_key_123456');
  });

  it('reports a refused permit as rejected with the service code, and never retries a transfer', async () => {
    const p = await permit(1_000_000n);
    await client.transfer(
      { from: 'BASE', to: 'ETH', amount: 1_000_000n, recipient: RECIPIENT, permit: p },
      {},
    );
    const e = await expectFailure(
      client.transfer({ from: 'BASE', to: 'ETH', amount: 1_000_000n, recipient: RECIPIENT, permit: p }, {}),
      'rejected',
    );
    expect([e.operation, e.httpStatus, e.serviceCode]).toEqual(['transfer', 400, 'permit_nonce_used']);
    expect(e.message).not.toContain(p.signature);
    expect(e.message).not.toContain(p.r.slice(2));
  });

  it('reports 429 as rate_limited with Retry-After', async () => {
    sandbox.admin.configure({ retryAfterSeconds: 7, faultScript: [{ op: 'transfer', fault: 'rate_limit' }] });
    const e = await expectFailure(
      client.transfer(
        {
          from: 'BASE',
          to: 'ETH',
          amount: 1_000_000n,
          recipient: RECIPIENT,
          permit: await permit(1_000_000n),
        },
        {},
      ),
      'rate_limited',
    );
    expect(e.retryAfterMs).toBe(7000);
    expect(sandbox.ledger()).toHaveLength(0);
  });

  it('reports a 5xx before acting (503) as unavailable, and nothing was paid', async () => {
    sandbox.admin.configure({ faultScript: [{ op: 'transfer', fault: 'fail_before' }] });
    const e = await expectFailure(
      client.transfer(
        {
          from: 'BASE',
          to: 'ETH',
          amount: 1_000_000n,
          recipient: RECIPIENT,
          permit: await permit(1_000_000n),
        },
        {},
      ),
      'unavailable',
    );
    expect(e.httpStatus).toBe(503);
    expect(sandbox.ledger()).toHaveLength(0);
  });

  for (const fault of ['fail_after', 'reset_after', 'broken_body'] as const) {
    it(`reports ${fault} as ambiguous — the sandbox did pay — and the re-send is answered from the idempotency record`, async () => {
      const p = await permit(1_000_000n);
      const req = { from: 'BASE', to: 'ETH', amount: 1_000_000n, recipient: RECIPIENT, permit: p } as const;
      sandbox.admin.configure({ faultScript: [{ op: 'transfer', fault }] });
      await expectFailure(client.transfer(req, { idempotencyKey: `k-${fault}` }), 'ambiguous');
      expect(sandbox.ledger()).toHaveLength(1);
      const replay = await client.transfer(req, { idempotencyKey: `k-${fault}` });
      expect(replay.intentId).toBe(sandbox.ledger()[0]?.intent_id);
      expect(sandbox.ledger()).toHaveLength(1);
    });
  }

  it('refuses the re-send of a paid permit as a reused nonce when the service ignores Idempotency-Key', async () => {
    sandbox.admin.configure({
      idempotencyReplay: false,
      faultScript: [{ op: 'transfer', fault: 'fail_after' }],
    });
    const p = await permit(1_000_000n);
    const req = { from: 'BASE', to: 'ETH', amount: 1_000_000n, recipient: RECIPIENT, permit: p } as const;
    await expectFailure(client.transfer(req, { idempotencyKey: 'k' }), 'ambiguous');
    const e = await expectFailure(client.transfer(req, { idempotencyKey: 'k' }), 'rejected');
    expect(e.serviceCode).toBe('permit_nonce_used');
    expect(sandbox.ledger()).toHaveLength(1);
  });

  it('reports a reset before acting as ambiguous, since the request had been written', async () => {
    sandbox.admin.configure({ faultScript: [{ op: 'transfer', fault: 'reset_before' }] });
    const e = await expectFailure(
      client.transfer(
        {
          from: 'BASE',
          to: 'ETH',
          amount: 1_000_000n,
          recipient: RECIPIENT,
          permit: await permit(1_000_000n),
        },
        {},
      ),
      'ambiguous',
    );
    expect(e.details).toMatch(/ECONNRESET|socket hang up/);
    expect(sandbox.ledger()).toHaveLength(0);
  });

  it('times out a hung service within the response timeout, as ambiguous', async () => {
    sandbox.admin.configure({ faultScript: [{ op: 'submit', fault: 'hang' }] });
    const short = createServiceClient({
      baseUrl: sandbox.url,
      apiKey: new Secret(API_KEY),
      connectTimeoutMs: 500,
      responseTimeoutMs: 800,
      retryMinDelayMs: 10,
    });
    try {
      // The client's own response timeout ended the call (ETIMEDOUT), not the service.
      const e = await expectFailure(
        short.submitSolanaTx({ intentId: 'int_x', signedTransaction: 'AQID' }, {}),
        'ambiguous',
      );
      expect(e.details).toContain('ETIMEDOUT');
    } finally {
      short.close();
    }
  });

  it('waits for beforeRequest (the rate-limit slot) before every HTTP attempt, retries included', async () => {
    let slots = 0;
    const limited = createServiceClient({
      baseUrl: sandbox.url,
      apiKey: new Secret(API_KEY),
      retryMinDelayMs: 10,
      beforeRequest: async () => {
        slots++;
        // Nothing is sent while the slot is not granted.
        expect(sandbox.admin.requests()).toHaveLength(slots - 1);
      },
    });
    sandbox.admin.configure({
      faultScript: [
        { op: 'estimate', fault: 'fail_before' },
        { op: 'estimate', fault: 'fail_before' },
      ],
    });
    await limited.estimate({ from: 'BASE', to: 'ETH', amount: 5_000_000n });
    limited.close();
    expect(sandbox.admin.requests().map((r) => r.op)).toEqual(['estimate', 'estimate', 'estimate']);
    expect(slots).toBe(3);
  });

  it('reports a refused connection as unavailable', async () => {
    const port = await freePort();
    const down = createServiceClient({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: new Secret(API_KEY),
      safeRetries: 0,
    });
    const e = await expectFailure(
      down.transfer(
        {
          from: 'BASE',
          to: 'ETH',
          amount: 1_000_000n,
          recipient: RECIPIENT,
          permit: await permit(1_000_000n),
        },
        {},
      ),
      'unavailable',
    );
    down.close();
    expect(e.details).toContain('ECONNREFUSED');
  });

  it('retries an estimate through a 503, a 429, a reset and a broken body', async () => {
    for (const fault of ['fail_before', 'rate_limit', 'reset_before', 'broken_body'] as const) {
      calls.length = 0;
      sandbox.admin.configure({ faultScript: [{ op: 'estimate', fault }] });
      const e = await client.estimate({ from: 'ETH', to: 'BASE', amount: 5_000_000n });
      expect(e.netReceive).toBe(4_960_000n);
      expect(calls.map((c) => c.outcome)).toEqual([
        fault === 'rate_limit' ? 'rate_limited' : fault === 'fail_before' ? 'unavailable' : 'ambiguous',
        'ok',
      ]);
    }
  });

  it('gives up on an estimate after its retries and says why', async () => {
    sandbox.admin.configure({ faults: { estimate: { fail_before: 1 } } });
    const e = await expectFailure(
      client.estimate({ from: 'ETH', to: 'BASE', amount: 5_000_000n }),
      'unavailable',
    );
    expect(e.operation).toBe('estimate');
  });

  it('does not retry an estimate the service refused', async () => {
    calls.length = 0;
    const e = await expectFailure(client.estimate({ from: 'ETH', to: 'BASE', amount: 1n }), 'rejected');
    expect(e.serviceCode).toBe('amount_below_fee');
    expect(calls).toHaveLength(1);
  });

  it('reports an injected fault on build-tx, submit and status the same way', async () => {
    const kp = await createKeyPairFromPrivateKeyBytes(new Uint8Array(32).fill(4));
    const wallet = await getAddressFromPublicKey(kp.publicKey);
    const req = { to: 'ETH', amount: 1_000_000n, fromWallet: wallet, recipient: RECIPIENT } as const;
    sandbox.admin.configure({ faultScript: [{ op: 'build_tx', fault: 'broken_body' }] });
    await expectFailure(client.buildSolanaTx(req), 'ambiguous');
    sandbox.admin.configure({ faultScript: [{ op: 'submit', fault: 'fail_before' }] });
    await expectFailure(
      client.submitSolanaTx({ intentId: 'x', signedTransaction: 'AQID' }, {}),
      'unavailable',
    );
    sandbox.admin.configure({ faults: { status: { rate_limit: 1 } } });
    await expectFailure(client.getIntentStatus('x'), 'rate_limited');
  });
});

describe('createPlant (the sample plant store)', () => {
  it('creates a plant with bearer auth and answers the Plant', async () => {
    const plant = await createPlant(
      { baseUrl: sandbox.url, token: API_KEY },
      { id: 7, name: 'fern', tag: 'green' },
    );
    expect(plant).toEqual({ id: 7n, name: 'fern', tag: 'green' });
  });

  it('turns a 400 into the Error record (int32 error, message)', async () => {
    await createPlant({ baseUrl: sandbox.url, token: API_KEY }, { id: 8, name: 'a' });
    const e = await expectFailure(
      createPlant({ baseUrl: sandbox.url, token: API_KEY }, { id: 8, name: 'b' }),
      'rejected',
    );
    expect([e.httpStatus, e.serviceCode]).toEqual([400, '400']);
    expect(e.serviceMessage).toContain('already exists');
    const noName = await expectFailure(
      createPlant({ baseUrl: sandbox.url, token: API_KEY }, { id: 9, name: '' }),
      'rejected',
    );
    expect(noName.serviceMessage).toContain('name');
  });

  it('is refused without the bearer token', async () => {
    const e = await expectFailure(
      createPlant({ baseUrl: sandbox.url, token: 'wrong' }, { id: 1, name: 'x' }),
      'rejected',
    );
    expect(e.httpStatus).toBe(401);
  });
});
