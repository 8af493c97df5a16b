import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MALICIOUS_SOLANA_KINDS } from '../../src/sandbox/solana-transaction.ts';
import { checkLedger, startStack, type Stack } from '../helpers/e2e.ts';
import { mixedRows, randomEvmAddress } from '../helpers/fixtures.ts';

describe('worker: guards before anything is signed', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
    stack.startWorker();
  });
  afterAll(async () => {
    await stack?.stop();
  });

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

  it('pays a batch once with three worker processes, keeping each owner’s nonce order', async () => {
    stack.startWorker();
    stack.startWorker();
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
});
