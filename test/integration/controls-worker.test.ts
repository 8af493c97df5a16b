import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import type { EvmChain } from '../../src/domain/chains.ts';
import { formatUsdc } from '../../src/domain/money.ts';
import { createProducer } from '../../src/queue/producer.ts';
import { fireSchedule } from '../../src/queue/schedule-firing.ts';
import { createChainReader } from '../../src/signing/evm/chain-reader.ts';
import type { BatchStatus } from '../../src/present/batch-status.ts';
import { approveCli } from '../helpers/approve.ts';
import { runCli, waitFor } from '../helpers/cli.ts';
import { checkLedger, startStack, type Stack } from '../helpers/e2e.ts';
import { csvOf, randomEvmAddress, TEST_EVM_ADDRESS, type Row } from '../helpers/fixtures.ts';

/*
 * docs/promises.md, promise 5: controls hold wherever a batch comes from. The newcomer's payroll
 * day (issue 43): only the worker has APPROVAL_THRESHOLD_USDC=1000; a terminal's `enqueue`, a
 * `rebalance` and a schedule's firing, each made by a process WITHOUT the variable, are held by the
 * worker before it signs anything, until a second person approves — then each row is paid once.
 */

const USDC = 1_000_000n;
const WORKER_CONTROLS = { APPROVAL_THRESHOLD_USDC: '1000' };

function rows(n: number, tag: string, amount: string): Row[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `${tag}-${i}`,
    from: 'BASE',
    to: 'ARB',
    amount,
    recipient: randomEvmAddress(),
  }));
}

describe("the worker enforces its own controls, whatever the enqueuing process's", () => {
  let stack: Stack;
  const prefix = () => stack.env['QUEUE_PREFIX'] as string;

  /** Held by the worker, every row back in `queued` and none of them given a payload. */
  const heldByWorker = async (batchId: string): Promise<BatchStatus> =>
    await waitFor(
      `${batchId} to be held by the worker`,
      async () => {
        const doc = await stack.status(batchId);
        return doc.held && doc.counts.in_progress === 0 && doc.counts.queued === doc.transfers.length
          ? doc
          : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );

  async function setBalance(chain: EvmChain, amount: bigint): Promise<void> {
    const reader = createChainReader({
      config: loadConfig({ [`EVM_RPC_URL_${chain}`]: stack.sandbox.rpc[chain] }),
    });
    await stack.sandbox.admin.setBalance(chain, TEST_EVM_ADDRESS, formatUsdc(amount));
    await waitFor(`${chain} RPC to show the balance`, async () =>
      (await reader.usdcBalance(chain, TEST_EVM_ADDRESS)) === amount ? true : undefined,
    );
  }

  beforeAll(async () => {
    stack = await startStack({ latencyMs: 5 });
    // `rebalance` reads no key: the treasury's public addresses.
    stack.env['EVM_OWNER_ADDRESSES'] = TEST_EVM_ADDRESS;
    stack.env['SOLANA_ADDRESS'] = stack.solanaAddress;
    stack.startWorker(WORKER_CONTROLS);
    await stack.workersReady();
    await waitFor('the worker to publish its controls', async () =>
      Object.values(await stack.client.hgetall(`${prefix()}:controls`)).some((v) => v.includes('"worker"'))
        ? true
        : undefined,
    );
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
  });

  it('holds a terminal enqueue, a rebalance and a schedule firing made without the threshold; nothing is signed until a second person approves', async () => {
    // 1. A terminal without the variable: 1,500 USDC. It says its controls differ from the worker's.
    const payroll = rows(3, 'term', '500');
    const enq = await stack.enqueue(payroll, ['--batch-id', 'term-1']);
    expect(enq.code, enq.stderr).toBe(0);
    expect((JSON.parse(enq.stdout) as { held: boolean }).held).toBe(false);
    expect(enq.stderr).toMatch(/controls differ from the running workers'.*APPROVAL_THRESHOLD_USDC/);
    expect(enq.stderr).toContain('"settings":["APPROVAL_THRESHOLD_USDC"]');

    // 2. `rebalance` without the variable: ETH below its min, POLYGON the donor, a move of about 1,090.
    await setBalance('ETH', 10n * USDC);
    await setBalance('POLYGON', 5_000n * USDC);
    const policy = join(stack.dir, 'topup.yaml');
    writeFileSync(policy, 'chains:\n  ETH: { min: 50, target: 1100 }\n  POLYGON: { target: 100 }\n');
    const rb = await runCli(['rebalance', policy, '--json'], stack.env);
    expect(rb.code, rb.stderr).toBe(0);
    const rbDoc = JSON.parse(rb.stdout) as { batch_id: string; held?: boolean };
    expect(rbDoc.batch_id).toMatch(/^rebalance-topup-/);

    // 3. A schedule's firing by a process without the variable: 1,200 USDC.
    const file = join(stack.dir, 'weekly.csv');
    const weekly = rows(2, 'wk', '600');
    writeFileSync(file, csvOf(weekly));
    const added = await runCli(
      ['schedule', 'add', 'weekly', '--cron', '0 2 * * 1', '--file', file],
      stack.env,
    );
    expect(added.code, added.stderr).toBe(0);
    const config = loadConfig(stack.env);
    expect(config.approvalThresholdUsdc).toBeUndefined();
    const producer = createProducer({ connection: stack.client, prefix: config.queuePrefix });
    let firingId: string;
    try {
      const fired = await fireSchedule(
        { redis: stack.client, prefix: config.queuePrefix, jobs: producer, config },
        'weekly',
        Date.UTC(2031, 0, 6, 2, 0, 0),
      );
      expect(fired).toMatchObject({ status: 'enqueued', outcome: { held: false } });
      firingId = fired.batchId;
    } finally {
      await producer.close();
    }

    // The worker holds all three before signing anything: the sandbox's ledger is empty.
    for (const id of ['term-1', rbDoc.batch_id, firingId]) {
      const doc = await heldByWorker(id);
      expect(doc.held_reason).toMatch(
        /^held by the worker's controls: APPROVAL_THRESHOLD_USDC: .* reaches the threshold of 1000/,
      );
      expect(doc.transfers.every((t) => t.intent_id === null && t.tx_hash === null)).toBe(true);
    }
    expect(await stack.ledger()).toEqual([]);

    // `status` says that this process's controls are not the workers'.
    const text = await runCli(['status', 'term-1'], stack.env);
    expect(text.stdout).toContain(
      "controls: this process's controls differ from the running workers': APPROVAL_THRESHOLD_USDC (here none, workers 1000.00)",
    );

    // Four eyes: the submitter cannot release it; a second person can.
    const own = await runCli(['approve', 'term-1'], stack.env, { input: 'y\n' });
    expect(own.code).toBe(4);
    expect(await stack.ledger()).toEqual([]);
    for (const id of ['term-1', rbDoc.batch_id, firingId]) {
      const approved = await approveCli(id, stack.env);
      expect(approved.code, approved.stderr).toBe(0);
      const done = await stack.waitComplete(id, 120_000);
      expect(done.counts.submitted).toBe(done.transfers.length);
      const paid = (await stack.ledger()).filter((e) =>
        done.transfers.some((t) => t.intent_id === e.intent_id),
      );
      expect(checkLedger(done, paid)).toEqual({ paidTwice: [], problems: [] });
    }
  }, 300_000);
});
