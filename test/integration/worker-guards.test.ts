import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import type { EvmChain } from '../../src/domain/chains.ts';
import { MALICIOUS_SOLANA_KINDS } from '../../src/sandbox/solana-transaction.ts';
import { createChainReader } from '../../src/signing/evm/chain-reader.ts';
import type { BatchStatus } from '../../src/present/batch-status.ts';
import { keys } from '../../src/store/keys.ts';
import { waitFor, type SpawnedProcess } from '../helpers/cli.ts';
import { checkLedger, startStack, type Stack } from '../helpers/e2e.ts';
import { OTHER_EVM_KEY } from '../helpers/sandbox.ts';
import {
  mixedRows,
  randomEvmAddress,
  randomSolanaAddress,
  TEST_EVM_ADDRESS,
  TEST_EVM_KEY,
} from '../helpers/fixtures.ts';

describe('worker: guards before anything is signed', () => {
  let stack: Stack;
  /** The workers running now (the last test replaces them). */
  const workers: SpawnedProcess[] = [];
  /** The env of the workers: the sandbox's Solana RPC too, so that Solana recipients are screened on chain. */
  const solanaRpc = () => ({ SOLANA_RPC_URL: stack.sandbox.rpc.SOLANA });
  beforeAll(async () => {
    stack = await startStack();
    workers.push(stack.startWorker(solanaRpc()));
  });
  afterAll(async () => {
    await stack?.stop();
  });

  /** USDC's blacklist on `chain`, as the sandbox's RPC shows it to the worker. */
  async function blacklist(chain: EvmChain, address: string, on: boolean): Promise<void> {
    const reader = createChainReader({
      config: loadConfig({ [`EVM_RPC_URL_${chain}`]: stack.sandbox.rpc[chain] }),
    });
    await stack.sandbox.admin.setBlacklisted(chain, address, on);
    await waitFor(`${chain} RPC to show ${address} ${on ? '' : 'not '}blacklisted`, async () =>
      (await reader.usdcBlacklisted(chain, address)) === on ? true : undefined,
    );
  }

  /** The batch's transfers by id: state, error code and owner. */
  const outcomes = (doc: BatchStatus) =>
    Object.fromEntries(
      doc.transfers.map((t) => [t.id, { state: t.state, code: t.error?.code ?? null, owner: t.owner }]),
    );

  /** The audit's screening refusals of a batch, oldest first. */
  async function screeningAudit(
    batchId: string,
  ): Promise<{ who: string; detail: Record<string, unknown> }[]> {
    const entries = await stack.client.xrange(keys(stack.env['QUEUE_PREFIX'] as string).audit, '-', '+');
    return entries
      .map(([, fields]) => Object.fromEntries(fields.flatMap((f, i) => (i % 2 ? [] : [[f, fields[i + 1]]]))))
      .filter((e) => e['action'] === 'screening_refused' && e['batch'] === batchId)
      .map((e) => ({
        who: e['who'] as string,
        detail: JSON.parse(e['detail'] as string) as Record<string, unknown>,
      }));
  }

  it('rejects every kind of malicious Solana transaction and never submits one', async () => {
    for (const [i, kind] of MALICIOUS_SOLANA_KINDS.entries()) {
      await stack.sandbox.admin.configure({ solanaTxKind: kind });
      const { batchId } = await stack.enqueue([
        { id: `mal-${i}`, from: 'SOLANA', to: 'BASE', amount: '12.34', recipient: randomEvmAddress() },
      ]);
      const doc = await stack.waitComplete(batchId, 30_000);
      expect(doc.transfers[0]?.state, kind).toBe('rejected');
      expect(doc.transfers[0]?.error?.code).toBe('policy_refused');
    }
    expect((await stack.ledger()).filter((e) => e.kind === 'solana')).toEqual([]);
    await stack.sandbox.admin.configure({ solanaTxKind: 'legit' });
  });

  it('rejects transfers whose fee spikes over MAX_FEE_BPS, paying nothing', async () => {
    await stack.sandbox.admin.configure({ feeBps: 250 });
    const rows = mixedRows(9, 'spike');
    const { batchId } = await stack.enqueue(rows);
    const doc = await stack.waitComplete(batchId, 30_000);
    expect(doc.counts.rejected).toBe(9);
    for (const t of doc.transfers) expect(t.error?.code).toBe('fee_too_high');
    const recipients = new Set(rows.map((r) => r.recipient.toLowerCase()));
    expect((await stack.ledger()).filter((e) => recipients.has(e.recipient.toLowerCase()))).toEqual([]);
    await stack.sandbox.admin.configure({ feeBps: 10 });
  });

  it('refuses before signing a recipient USDC blacklisted on its destination chain and a Solana recipient whose USDC account is frozen: rejected, audited, counted, nothing paid to them', async () => {
    const blacklisted = randomEvmAddress();
    const frozen = randomSolanaAddress();
    const fresh = randomSolanaAddress();
    await blacklist('ARB', blacklisted, true);
    const frozenAccount = await stack.sandbox.admin.setFrozen(frozen, true);
    const { batchId } = await stack.enqueue([
      { id: 'bl-evm', from: 'BASE', to: 'ARB', amount: '5.00', recipient: blacklisted },
      // The same address in another case, paid from Solana: still USDC's blacklist on ARB.
      { id: 'bl-sol', from: 'SOLANA', to: 'ARB', amount: '5.00', recipient: blacklisted.toLowerCase() },
      { id: 'frozen', from: 'BASE', to: 'SOLANA', amount: '5.00', recipient: frozen },
      // A Solana recipient without a USDC account yet is fine: the payment creates it.
      { id: 'fresh', from: 'BASE', to: 'SOLANA', amount: '5.00', recipient: fresh },
      // The blacklist is per chain: the same address on BASE is paid.
      { id: 'other-chain', from: 'ETH', to: 'BASE', amount: '5.00', recipient: blacklisted },
    ]);
    const doc = await stack.waitComplete(batchId, 60_000);
    expect(outcomes(doc)).toMatchObject({
      'bl-evm': { state: 'rejected', code: 'recipient_blacklisted' },
      'bl-sol': { state: 'rejected', code: 'recipient_blacklisted' },
      frozen: { state: 'rejected', code: 'recipient_frozen' },
      fresh: { state: 'submitted' },
      'other-chain': { state: 'submitted' },
    });
    expect(doc.transfers.find((t) => t.id === 'frozen')?.error?.message).toContain(frozenAccount);
    // Nothing was signed for the refused rows: the service never saw them.
    const ledger = await stack.ledger();
    const paid = (to: string, recipient: string) =>
      ledger.filter((e) => e.to === to && e.recipient.toLowerCase() === recipient.toLowerCase());
    expect(paid('ARB', blacklisted)).toEqual([]);
    expect(paid('SOLANA', frozen)).toEqual([]);
    expect(paid('SOLANA', fresh)).toHaveLength(1);
    // Each refusal audited with the chain that refused, and counted by check.
    const audit = await screeningAudit(batchId);
    expect(audit.map((a) => [a.who, a.detail['transfer'], a.detail['code']]).sort()).toEqual([
      ['chain:ARB', 'bl-evm', 'recipient_blacklisted'],
      ['chain:ARB', 'bl-sol', 'recipient_blacklisted'],
      ['chain:SOLANA', 'frozen', 'recipient_frozen'],
    ]);
    const counters = `${stack.env['QUEUE_PREFIX'] as string}:metrics:counters`;
    await waitFor('the refusals to be counted', async () => {
      const c = await stack.client.hmget(
        counters,
        'screening_refusals|blacklist',
        'screening_refusals|frozen',
      );
      return Number(c[0]) >= 2 && Number(c[1]) >= 1 ? true : undefined;
    });
    await blacklist('ARB', blacklisted, false);
  });

  it('reads many addresses in one eth_call that asks USDC on the chain about each: the blacklisted ones, and only they, read blacklisted', async () => {
    const listed = [randomEvmAddress(), randomEvmAddress()];
    for (const a of listed) await blacklist('BASE', a, true);
    const bodies: unknown[] = [];
    const watched = (async (url: string | URL | Request, init?: RequestInit) => {
      bodies.push(JSON.parse(String(init?.body)));
      return await fetch(url, init);
    }) as typeof fetch;
    const reader = createChainReader({
      config: loadConfig({ EVM_RPC_URL_BASE: stack.sandbox.rpc.BASE }),
      fetch: watched,
    });
    const [clear1, clear2, clear3] = [randomEvmAddress(), randomEvmAddress(), randomEvmAddress()];
    const asked = [clear1, listed[0], clear2, (listed[1] as string).toLowerCase(), clear3, listed[0]];
    // Asked in one turn (as a run asks about its owners): one request.
    const answers = await Promise.all(asked.map((a) => reader.usdcBlacklisted('BASE', a as string)));
    expect(answers).toEqual([false, true, false, true, false, true]);
    expect(bodies).toHaveLength(1);
    const call = bodies[0] as { method: string; params: [{ to?: string; data: string }, string] };
    // The chain ran the code: no contract was called, and no JSON-RPC batch was needed.
    expect(call.method).toBe('eth_call');
    expect(call.params[0].to).toBeUndefined();
  });

  it('pays a batch once with three worker processes, keeping each owner’s nonce order', async () => {
    workers.push(stack.startWorker(solanaRpc()));
    workers.push(stack.startWorker(solanaRpc()));
    const rows = mixedRows(150, 'three');
    const { batchId } = await stack.enqueue(rows);
    const doc = await stack.waitComplete(batchId, 120_000);
    expect(doc.counts.submitted).toBe(150);
    const ledger = await stack.ledger();
    const { paidTwice, problems } = checkLedger(doc, ledger);
    expect(paidTwice).toEqual([]);
    expect(problems).toEqual([]);
    for (const chain of ['ETH', 'BASE', 'ARB', 'POLYGON']) {
      const nonces = ledger.filter((e) => e.kind === 'evm' && e.from === chain).map((e) => Number(e.nonce));
      expect(nonces).toEqual(nonces.map((_, i) => i));
    }
  });

  // Last: it replaces the workers (a worker keeps an owner's reading for up to a minute).
  it('an owner USDC blacklisted on the source chain signs nothing: alone it fails owner_blacklisted; beside another owner, that one pays; SCREENING_ONCHAIN=off refuses nothing', async () => {
    const other = privateKeyToAccount(OTHER_EVM_KEY).address;
    await blacklist('ETH', TEST_EVM_ADDRESS, true);
    // Fresh workers: the running ones may hold a reading of the owner from before (at most a minute).
    await Promise.all(workers.splice(0).map((w) => w.stop(10_000)));
    workers.push(stack.startWorker(solanaRpc()));
    const alone = await stack.enqueue([
      { id: 'alone', from: 'ETH', to: 'BASE', amount: '7.00', recipient: randomEvmAddress() },
    ]);
    const aloneDoc = await stack.waitComplete(alone.batchId, 60_000);
    expect(outcomes(aloneDoc)).toEqual({
      alone: { state: 'failed', code: 'owner_blacklisted', owner: null },
    });
    expect((await screeningAudit(alone.batchId)).map((a) => [a.who, a.detail['check']])).toEqual([
      ['chain:ETH', 'owner_blacklist'],
    ]);

    await Promise.all(workers.splice(0).map((w) => w.stop(10_000)));
    workers.push(stack.startWorker({ ...solanaRpc(), EVM_PRIVATE_KEY: `${TEST_EVM_KEY},${OTHER_EVM_KEY}` }));
    const pair = await stack.enqueue([
      { id: 'pair-1', from: 'ETH', to: 'BASE', amount: '7.00', recipient: randomEvmAddress() },
      { id: 'pair-2', from: 'ETH', to: 'ARB', amount: '8.00', recipient: randomEvmAddress() },
    ]);
    const pairDoc = await stack.waitComplete(pair.batchId, 60_000);
    expect(outcomes(pairDoc)).toEqual({
      'pair-1': { state: 'submitted', code: null, owner: other },
      'pair-2': { state: 'submitted', code: null, owner: other },
    });
    // The service saw permits of the other owner only: the blacklisted one signed nothing.
    const recipients = new Set(pairDoc.transfers.map((t) => t.recipient.toLowerCase()));
    const paidBy = (await stack.ledger())
      .filter((e) => recipients.has(e.recipient.toLowerCase()))
      .map((e) => e.owner);
    expect(paidBy).toEqual([other, other]);

    // Off: the worker reads nothing and refuses nothing. A blacklisted recipient's transfer is
    // accepted on the source chain, and the mint on its destination reverts: the money is stuck.
    await Promise.all(workers.splice(0).map((w) => w.stop(10_000)));
    workers.push(stack.startWorker({ ...solanaRpc(), SCREENING_ONCHAIN: 'off' }));
    const listed = randomEvmAddress();
    await blacklist('POLYGON', listed, true);
    const off = await stack.enqueue([
      { id: 'off', from: 'BASE', to: 'POLYGON', amount: '6.00', recipient: listed },
    ]);
    const offDoc = await stack.waitComplete(off.batchId, 60_000);
    expect(outcomes(offDoc)).toMatchObject({ off: { state: 'submitted', code: null } });
    expect(await screeningAudit(off.batchId)).toEqual([]);
    expect(await stack.sandbox.admin.balance('POLYGON', listed)).toBe(0n);
  });
});
