import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkLedger, startStack, type Stack } from '../helpers/e2e.ts';
import { mixedRows } from '../helpers/fixtures.ts';

describe('worker: a mixed batch', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('submits every row of a 210-row mixed batch, each paid exactly once with the recorded intent id', async () => {
    const rows = mixedRows(210, 'mix');
    const { code, batchId } = await stack.enqueue(rows);
    expect(code).toBe(0);
    stack.startWorker();
    const doc = await stack.waitComplete(batchId);
    // Named, so that a row that did not go through says which, from where and why.
    const notSubmitted = doc.transfers
      .filter((t) => t.state !== 'submitted')
      .map((t) => ({ id: t.id, from: t.from, to: t.to, state: t.state, error: t.error }));
    expect(notSubmitted).toEqual([]);
    expect(doc.counts).toMatchObject({ submitted: 210, failed: 0, rejected: 0, needs_review: 0 });
    const ledger = await stack.ledger();
    expect(ledger).toHaveLength(210);
    const { paidTwice, problems } = checkLedger(doc, ledger);
    expect(paidTwice).toEqual([]);
    expect(problems).toEqual([]);
    // EVM-source rows carry a tx hash, Solana-source rows a signature.
    for (const t of doc.transfers) {
      if (t.from === 'SOLANA') expect(t.tx_signature).toBeTruthy();
      else expect(t.tx_hash).toBeTruthy();
    }
    // Permits of one (chain, owner) reached the service in nonce order.
    for (const chain of ['ETH', 'BASE', 'ARB', 'POLYGON']) {
      const nonces = ledger.filter((e) => e.kind === 'evm' && e.from === chain).map((e) => Number(e.nonce));
      expect(nonces).toEqual(nonces.map((_, i) => i));
    }
  });
});
