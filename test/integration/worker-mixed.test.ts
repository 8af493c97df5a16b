import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SpawnedProcess } from '../helpers/cli.ts';
import { checkLedger, startStack, type Stack } from '../helpers/e2e.ts';
import { mixedRows } from '../helpers/fixtures.ts';

describe('worker: a mixed batch', () => {
  let stack: Stack;
  let worker: SpawnedProcess | undefined;
  const rows = mixedRows(210, 'mix');
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('submits every row of a 210-row mixed batch, each paid exactly once with the recorded intent id', async () => {
    const { code, batchId } = await stack.enqueue(rows);
    expect(code).toBe(0);
    worker = stack.startWorker();
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

  it('after its Redis lost its data, the same file again pays nothing twice: every row whose Idempotency-Key the service knows ends needs_review with that evidence', async () => {
    // An operator's Redis is emptied (a volume deleted, a restore from an old backup) and the same
    // file is enqueued again. The sandbox honours Idempotency-Key: the new payloads, under the keys
    // the first ones used, are refused as `idempotency_key_reused`, proof that this very transfer
    // reached the service before.
    await worker?.stop(10_000);
    await stack.client.flushall();
    const { code, batchId } = await stack.enqueue(rows);
    expect(code).toBe(0);
    stack.startWorker();
    const doc = await stack.waitComplete(batchId);
    const ledger = await stack.ledger();
    expect(checkLedger(doc, ledger).problems).toEqual([]);
    expect(ledger).toHaveLength(210);
    const other = doc.transfers.filter(
      (t) => t.state !== 'needs_review' || t.error?.code !== 'idempotency_key_reused',
    );
    expect(other.map((t) => ({ id: t.id, state: t.state, error: t.error }))).toEqual([]);
    for (const t of doc.transfers) {
      expect(t.error?.message).toMatch(/Idempotency-Key \S+\/1 as used before with another payload/);
      expect(t.evidence.at(-1)).toMatch(/needs_review: idempotency_key_reused/);
    }
    // Never retried: `retry` re-queues failed transfers only.
    expect(doc.counts).toMatchObject({ needs_review: 210, failed: 0, submitted: 0 });
  });
});
