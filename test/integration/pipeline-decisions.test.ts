import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Secret, type Config } from '../../src/config/config.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { signingKeys } from '../../src/signing/evm/keystore.ts';
import type { TransferRequest } from '../../src/domain/transfer.ts';
import { createLogger } from '../../src/log/logger.ts';
import { DEFAULT_POLICY, type PipelinePolicy } from '../../src/pipeline/policy.ts';
import { abandonTransfer } from '../../src/pipeline/abandon.ts';
import { runTransfer, type PipelineDeps, type StepOutcome } from '../../src/pipeline/run-transfer.ts';
import { readReview } from '../../src/store/approvals.ts';
import { approveBatch } from '../../src/ops/approve-batch.ts';
import { resolveTransfer } from '../../src/ops/resolve-transfer.ts';
import { retryBatch } from '../../src/ops/retry-batch.ts';
import { addRecipient, listRecipients, removeRecipient } from '../../src/ops/recipients.ts';
import { createSandbox, type Sandbox } from '../../src/sandbox/sandbox.ts';
import { createBatchReader } from '../../src/present/batch-status.ts';
import { writeBatchWithJobs } from '../../src/ingest/job-hand-off.ts';
import { createRedis } from '../../src/store/redis.ts';
import { createTransferStore } from '../../src/store/transfer-store.ts';
import { wireEvm, wirePipeline, wireServiceClient, wireSolana } from '../../src/worker/pipeline-wiring.ts';
import { randomEvmAddress, randomSolanaAddress, solanaKeypairFile } from '../helpers/fixtures.ts';
import { waitFor } from '../helpers/cli.ts';
import { startPrivateRedis, type TestRedis } from '../helpers/redis.ts';
import { startReplyCutter, type ReplyCutter } from '../helpers/reply-cutter.ts';
import { TEST_EVM_ADDRESS, TEST_EVM_KEY } from '../helpers/sandbox.ts';

/**
 * The money rules of one transfer, each driven through the real pipeline against the real sandbox
 * (in process, over HTTP) with real signatures and a real Redis; the sandbox's ledger is the truth.
 */
describe('pipeline decisions', () => {
  let redis: TestRedis;
  let client: Redis;
  let sandbox: Sandbox;
  let config: Config;
  let prefix: string;
  let n = 0;
  const logger = createLogger('silent');
  const fast: PipelinePolicy = {
    ...DEFAULT_POLICY,
    backoffBaseMs: 20,
    backoffMaxMs: 100,
    settleMarginMs: 300,
    // The sandbox's chains make a block about every second, stamped in whole seconds (as real
    // nodes do): a block as new as a refusal is one stamped at or after it, which comes only after
    // the next whole second and a block time — up to ~2.3 s after the refusal. A shorter window
    // could never see one, and every refusal would end "the chain could not tell".
    nonceSettleWindowMs: 4_000,
  };

  beforeAll(async () => {
    redis = await startPrivateRedis();
    client = new Redis(redis.url);
    sandbox = await createSandbox({ port: 0 });
    const sol = solanaKeypairFile();
    config = loadConfig(
      {
        TRANSFER_API_URL: sandbox.url,
        TRANSFER_API_KEY: sandbox.apiKey,
        PERMIT_SPENDER: sandbox.spender,
        EVM_PRIVATE_KEY: TEST_EVM_KEY,
        SOLANA_KEYPAIR_FILE: sol.file,
        EVM_RPC_URL_BASE: sandbox.rpcUrl('BASE'),
        SERVICE_RESPONSE_TIMEOUT_MS: '500',
      },
      { keys: signingKeys },
    );
  });
  afterAll(async () => {
    client?.disconnect();
    await sandbox?.close();
    await redis?.stop();
  });
  beforeEach(async () => {
    await sandbox.admin.reset();
    prefix = `pd${++n}`;
  });

  /** The wired EVM parts, without the owners' balance reservations when `drop` (see `setup`). */
  function withoutBalances(evm: PipelineDeps['evm'], drop: boolean): PipelineDeps['evm'] {
    return evm && drop ? { ...evm, balances: undefined } : evm;
  }

  /**
   * `lostAnswers`: the test makes the service hang, and each lost answer costs the client's response
   * timeout, so it is short (500 ms); otherwise it is generous, so that a real transfer on a busy
   * machine is not taken for a lost answer. `balances: false` leaves out the owners' balance
   * reservations, for a test whose RPC lags so far behind that it reads a block from before the
   * sandbox funded the owner (the transfer would wait for a deposit instead of the path under test).
   */
  async function setup(
    options: {
      policy?: PipelinePolicy;
      config?: Partial<Config>;
      redis?: Redis;
      lostAnswers?: boolean;
      balances?: false;
    } = {},
  ) {
    const cfg = { ...config, ...options.config } as Config;
    const on = { redis: options.redis ?? client, prefix, logger };
    const store = createTransferStore({ redis: on.redis, prefix });
    // The worker's own wiring (src/worker/pipeline-wiring.ts): its pause, approval gate, owner
    // balance reservations and nonce pool; only the client's response timeout is the test's.
    const deps: PipelineDeps = wirePipeline({
      ...on,
      config: cfg,
      store,
      service: wireServiceClient({
        ...on,
        config: { ...cfg, serviceResponseTimeoutMs: options.lostAnswers ? 500 : 15_000 },
      }),
      evm: withoutBalances(wireEvm({ ...on, config: cfg }), options.balances === false),
      solana: await wireSolana({ config: cfg, logger }),
      policy: options.policy ?? fast,
    });
    const jobs = { addTransfers: async () => {} };
    // The records as ingest writes them; this test runs the transfers itself, so no job is added.
    const writer = {
      redis: client,
      prefix,
      fingerprint: (t: TransferRequest) => `${t.recipient}${t.amount}`,
      jobs: jobs,
    };
    const rows: TransferRequest[] = [];
    const add = (row: Omit<TransferRequest, 'line' | 'hasPayoutId' | 'memo'>) => {
      rows.push({ ...row, line: rows.length + 2, hasPayoutId: true, memo: null });
    };
    const write = async (batchId: string) => {
      await writeBatchWithJobs(
        writer,
        {
          batchId,
          digest: batchId,
          source: 'csv',
          submittedBy: 'cli:test',
          approvalsRequired: 1,
          createdAt: Date.now(),
          held: false,
          callbackUrl: null,
          transfers: rows,
          dropped: [],
        },
        { onOwnedPayout: 'strict' },
      );
    };
    let last: StepOutcome | undefined;
    /** Runs the job the way the queue would: again after each `later`, until it is done. */
    const drive = async (batchId: string, id: string, maxRuns = 200) => {
      for (let i = 0; i < maxRuns; i++) {
        const out = await runTransfer(deps, batchId, id);
        last = out;
        if (out.kind === 'done') return out.state;
        await new Promise((r) => setTimeout(r, Math.min(out.delayMs, 100)));
      }
      throw new Error('did not finish');
    };
    /**
     * The last run that `drive` made reported the record it carried, the final transition laid
     * over it as the store wrote it: the same, stored field by stored field and read, as the
     * record read back now.
     */
    const reportsStored = async (batchId: string, id: string) => {
      const rec = await store.load(batchId, id);
      const record = last?.kind === 'done' ? last.record : undefined;
      expect(record?.raw).toEqual(rec?.raw);
      expect({ ...record, steps: undefined }).toEqual(rec);
    };
    return { deps, store, add, write, drive, jobs, reportsStored };
  }

  it('reads a transfer record once per run (in the step that takes it) and keeps the batch counters true', async () => {
    const t = await setup();
    const [sol, evm] = [randomEvmAddress(), randomEvmAddress()];
    t.add({ id: 's', from: 'SOLANA', to: 'BASE', amount: 3_000_000n, recipient: sol });
    t.add({ id: 'e', from: 'BASE', to: 'ARB', amount: 4_000_000n, recipient: evm });
    await t.write('once');
    const loads: string[] = [];
    const store = t.deps.store;
    const counted: PipelineDeps = {
      ...t.deps,
      store: {
        ...store,
        load: async (batchId: string, transferId: string) => {
          loads.push(transferId);
          return await store.load(batchId, transferId);
        },
      },
    };
    const s = await runTransfer(counted, 'once', 's');
    // SOLANA: the take's read is the run's only one (estimate, build, sign, send and the final
    // transition go on from it and from what the transition returns).
    expect(loads).toEqual([]);
    const e = await runTransfer(counted, 'once', 'e');
    // EVM: none either — the owner chosen, the balance reserved and the permit signed are laid over
    // the record the run carries, as each write returns.
    expect(loads).toEqual([]);
    expect([s.kind === 'done' && s.state, e.kind === 'done' && e.state]).toEqual(['submitted', 'submitted']);
    // What each run reports is what the store holds, and no lock is left behind.
    for (const [out, id] of [
      [s, 's'],
      [e, 'e'],
    ] as const) {
      const rec = await store.load('once', id);
      expect(out.kind === 'done' && out.record?.raw).toEqual(rec?.raw);
      expect(out.kind === 'done' && { ...out.record, steps: undefined }).toEqual(rec);
      expect(await client.exists(`${prefix}:t:once:${id}:lock`)).toBe(0);
    }
    const [rs, re] = [await store.load('once', 's'), await store.load('once', 'e')];
    const b = await client.hgetall(`${prefix}:batch:once`);
    expect([b['n_queued'], b['n_in_progress'], b['n_submitted'], b['complete']]).toEqual([
      '0',
      '0',
      '2',
      '1',
    ]);
    expect(b['paid_amount']).toBe('7000000');
    expect(b['fee']).toBe(String((rs?.feeTotal ?? 0n) + (re?.feeTotal ?? 0n)));
    expect(b['paid_fee']).toBe(b['fee']);
    expect(b['paid_net_receive']).toBe(String((rs?.netReceive ?? 0n) + (re?.netReceive ?? 0n)));
  });

  it('re-sends the same permit with the same Idempotency-Key after a lost answer, and pays once', async () => {
    const t = await setup();
    t.add({ id: 'a', from: 'BASE', to: 'ARB', amount: 5_000_000n, recipient: randomEvmAddress() });
    await t.write('b1');
    sandbox.admin.configure({
      faultScript: [{ op: 'transfer', fault: 'fail_after' }],
      idempotencyReplay: true,
    });
    expect(await t.drive('b1', 'a')).toBe('submitted');
    const ledger = sandbox.ledger();
    expect(ledger).toHaveLength(1);
    const rec = await t.store.load('b1', 'a');
    expect(rec?.intentId).toBe(ledger[0]?.intent_id);
    expect(rec?.raw['sends']).toBe('2');
    expect(ledger[0]?.idempotency_key).toBe('b1/a/1');
  });

  it('ends needs_review when a re-send after a lost answer is refused (the lost attempt paid)', async () => {
    const t = await setup();
    t.add({ id: 'a', from: 'BASE', to: 'ARB', amount: 5_000_000n, recipient: randomEvmAddress() });
    await t.write('b2');
    sandbox.admin.configure({
      faultScript: [{ op: 'transfer', fault: 'fail_after' }],
      idempotencyReplay: false,
    });
    expect(await t.drive('b2', 'a')).toBe('needs_review');
    expect(sandbox.ledger()).toHaveLength(1);
    const rec = await t.store.load('b2', 'a');
    expect(rec?.errorCode).toBe('outcome_unknown');
    expect(rec?.raw['evidence']).toContain('ambiguous');
  });

  it('fails a transfer whose first send is refused for another reason than the nonce after the settle window, and gives the nonce back', async () => {
    const t = await setup();
    // An amount below the fee is refused by the estimate; a permit for a wrong spender by transfer.
    t.add({ id: 'a', from: 'BASE', to: 'ARB', amount: 5_000_000n, recipient: randomEvmAddress() });
    await t.write('b3');
    const wrong = { ...config, permitSpender: randomEvmAddress(), permitSpenderByChain: {} } as Config;
    const t2 = await setup({ config: wrong });
    expect(await t2.drive('b3', 'a')).toBe('failed');
    const rec = await t.store.load('b3', 'a');
    // It waited for the chain (the window is 4 s here) before taking the refusal as final: the
    // record's own evidence, stamped by the worker, shows the refusal and the verdict that far apart.
    const [refused, final] = (rec?.evidence ?? []).map((line) => Date.parse(line.split(' ')[0] ?? ''));
    expect(rec?.evidence).toEqual([
      expect.stringMatching(/ send 1 failed: rejected: HTTP 400: permit_spender_mismatch/),
      expect.stringMatching(/ failed: refused: /),
    ]);
    expect(final! - refused!).toBeGreaterThanOrEqual(fast.nonceSettleWindowMs);
    expect(rec?.errorCode).toBe('refused');
    expect(rec?.errorMessage).toMatch(/permit_spender_mismatch/);
    expect(rec?.raw['payload_gen']).toBe('1');
    expect(sandbox.ledger()).toHaveLength(0);
    // Nonce 0 went back to the pool: the next transfer of this owner pays with it.
    const t3 = await setup();
    t3.add({ id: 'b', from: 'BASE', to: 'ARB', amount: 6_000_000n, recipient: randomEvmAddress() });
    await t3.write('b3b');
    expect(await t3.drive('b3b', 'b')).toBe('submitted');
    expect(sandbox.ledger().map((e) => e.nonce)).toEqual(['0']);
  });

  it('keeps a transfer’s owner through retry: a worker without that owner’s key leaves it queued, one with it pays', async () => {
    const wrong = { ...config, permitSpender: randomEvmAddress(), permitSpenderByChain: {} } as Config;
    const t = await setup({ config: wrong });
    t.add({ id: 'a', from: 'BASE', to: 'ARB', amount: 5_000_000n, recipient: randomEvmAddress() });
    await t.write('b7');
    expect(await t.drive('b7', 'a')).toBe('failed');
    expect((await t.store.load('b7', 'a'))?.raw['owner']).toBe(TEST_EVM_ADDRESS);
    await retryBatch({ redis: client, prefix, jobs: t.jobs, actor: 'test', config }, 'b7');
    // retry keeps the owner: only its key may sign this transfer again.
    expect((await t.store.load('b7', 'a'))?.raw['owner']).toBe(TEST_EVM_ADDRESS);
    const other = await setup({
      config: { evmPrivateKeys: [new Secret(`0x${'11'.repeat(32)}`)] },
    });
    const out = await runTransfer(other.deps, 'b7', 'a');
    expect(out).toMatchObject({ kind: 'later', wait: 'no_key' });
    const waiting = await t.store.load('b7', 'a');
    expect(waiting?.state).toBe('queued');
    expect(waiting?.raw['wait_reason']).toMatch(/only it may sign again; this worker has no key for it/);
    expect(sandbox.ledger()).toHaveLength(0);
    const mine = await setup();
    expect(await mine.drive('b7', 'a')).toBe('submitted');
    expect(sandbox.ledger().map((e) => e.owner)).toEqual([TEST_EVM_ADDRESS]);
  });

  it('fails a transfer within the deadline when the service keeps answering 503, paying nothing', async () => {
    const t = await setup({ policy: { ...fast, transientDeadlineMs: 1_500 } });
    t.add({ id: 'a', from: 'BASE', to: 'ETH', amount: 7_000_000n, recipient: randomEvmAddress() });
    await t.write('b4');
    sandbox.admin.configure({ faults: { transfer: { fail_before: 1 } } });
    expect(await t.drive('b4', 'a')).toBe('failed');
    await t.reportsStored('b4', 'a');
    // Each send was answered 503 and the transfer ended failed after them (evidence, in order).
    const rec = await t.store.load('b4', 'a');
    expect(rec?.errorCode).toBe('service_unavailable');
    const evidence = rec?.evidence ?? [];
    expect(evidence.at(-1)).toMatch(/ failed: service_unavailable: /);
    expect(evidence.slice(0, -1).length).toBeGreaterThan(0);
    for (const line of evidence.slice(0, -1)) expect(line).toMatch(/ send \d+ failed: unavailable: HTTP 503/);
    expect(sandbox.ledger()).toHaveLength(0);
  });

  it('gives up after bounded identical re-sends when answers keep getting lost: needs_review, never a new permit', async () => {
    const t = await setup({ lostAnswers: true });
    t.add({ id: 'a', from: 'BASE', to: 'ETH', amount: 7_000_000n, recipient: randomEvmAddress() });
    await t.write('b5');
    sandbox.admin.configure({ faults: { transfer: { hang: 1 } }, hangMs: null });
    expect(await t.drive('b5', 'a')).toBe('needs_review');
    const rec = await t.store.load('b5', 'a');
    expect(rec?.raw['payload_gen']).toBe('1');
    expect(Number(rec?.raw['sends'])).toBe(DEFAULT_POLICY.maxAmbiguousResends + 1);
    expect(sandbox.ledger()).toHaveLength(0);
  });

  it('settles a needs_review permit as failed only from a block past its deadline showing the nonce unused; retry then pays it once', async () => {
    // A 2 s deadline (below PERMIT_DEADLINE_SECONDS' minimum, set directly) so the test waits
    // seconds, not minutes, for the deadline to pass.
    const t = await setup({ config: { permitDeadlineSeconds: 2 } as Partial<Config>, lostAnswers: true });
    t.add({ id: 'a', from: 'BASE', to: 'POLYGON', amount: 3_000_000n, recipient: randomEvmAddress() });
    await t.write('b6');
    sandbox.admin.configure({ faults: { transfer: { hang: 1 } }, hangMs: null });
    expect(await t.drive('b6', 'a')).toBe('needs_review');
    const settleAt = Number((await t.store.load('b6', 'a'))?.raw['settle_at']);
    sandbox.admin.configure({ faults: {}, rpcNonceLagMs: 45_000 });
    await new Promise((r) => setTimeout(r, Math.max(0, settleAt - Date.now()) + 50));
    // Past the deadline by the worker's clock, but the RPC is 45 s behind: its newest block is from
    // before the deadline, and the permit is not judged unused from it.
    expect((await runTransfer(t.deps, 'b6', 'a', { settleOnly: true })).kind).toBe('later');
    expect((await t.store.load('b6', 'a'))?.state).toBe('needs_review');
    sandbox.admin.configure({ rpcNonceLagMs: 0 });
    // The verdict rests on the finalized block (a head block a reorganisation replaces could lack a
    // permit that executed): record which block each chain read of the settle names.
    const chain = t.deps.evm!.chain;
    const tags: unknown[] = [];
    const read = chain.permitNonceAtHead.bind(chain);
    chain.permitNonceAtHead = (c, owner, tag) => (tags.push(tag), read(c, owner, tag));
    expect(await t.drive('b6', 'a')).toBe('failed');
    expect(tags.length).toBeGreaterThan(0);
    expect(tags.every((tag) => tag === 'finalized')).toBe(true);
    const settled = await t.store.load('b6', 'a');
    expect(settled?.errorCode).toBe('expired_unused');
    expect(settled?.raw['evidence']).toMatch(
      /past the permit deadline, the chain's nonce is 0 \(permit nonce 0\)/,
    );
    await retryBatch({ redis: client, prefix, jobs: t.jobs, actor: 'test', config }, 'b6');
    expect(await t.drive('b6', 'a')).toBe('submitted');
    // Paid once, with the nonce the expired permit never used: the pool moved back to it.
    expect(sandbox.ledger().map((e) => e.nonce)).toEqual(['0']);
  });

  it('never judges a needs_review permit unused from an RPC 45 s behind: one that executed just before its deadline is not paid again', async () => {
    // A 2 s deadline (below PERMIT_DEADLINE_SECONDS' minimum, set directly) so the test waits
    // seconds, not minutes, for the deadline to pass.
    // Without balance reservations: the RPC is 45 s behind from the start, and its newest block,
    // from before the sandbox funded the owner, shows no USDC: the worker's balance check would
    // hold the transfer waiting for a deposit, and never reach the lost answer this test is about.
    const t = await setup({ config: { permitDeadlineSeconds: 2 } as Partial<Config>, balances: false });
    t.add({ id: 'a', from: 'BASE', to: 'POLYGON', amount: 3_000_000n, recipient: randomEvmAddress() });
    await t.write('b10');
    // The service executes the permit and the answer is lost; the identical re-send is refused
    // (nonce used): the transfer may have paid, so it is in review.
    sandbox.admin.configure({
      rpcNonceLagMs: 45_000,
      faultScript: [{ op: 'transfer', fault: 'fail_after' }],
      idempotencyReplay: false,
    });
    expect(await t.drive('b10', 'a')).toBe('needs_review');
    expect(sandbox.ledger()).toHaveLength(1);
    const settleAt = Number((await t.store.load('b10', 'a'))?.raw['settle_at']);
    await new Promise((r) => setTimeout(r, Math.max(0, settleAt - Date.now()) + 50));
    // Past its deadline by the worker's clock; the RPC's newest block is 45 s old and still shows
    // the nonce unused. That block is from before the deadline: it proves nothing.
    await runTransfer(t.deps, 'b10', 'a', { settleOnly: true });
    expect((await t.store.load('b10', 'a'))?.state).toBe('needs_review');
    // The RPC catches up and an operator retries the batch: nothing is paid again.
    sandbox.admin.configure({ rpcNonceLagMs: 0 });
    await retryBatch({ redis: client, prefix, jobs: t.jobs, actor: 'test', config }, 'b10');
    expect(await t.drive('b10', 'a')).toBe('needs_review');
    expect(sandbox.ledger()).toHaveLength(1);
    const rec = await t.store.load('b10', 'a');
    expect(rec?.state).toBe('needs_review');
    expect(rec?.raw['evidence']).toMatch(/nonce was used/);
  });

  it('after a refusal, waits for an RPC 1.5 s behind to show the outside signer’s nonce, then signs again with the next one', async () => {
    const t = await setup({ policy: { ...fast, nonceSettleWindowMs: 5_000 } });
    t.add({ id: 'a', from: 'BASE', to: 'ARB', amount: 10_000_000n, recipient: randomEvmAddress() });
    t.add({ id: 'b', from: 'BASE', to: 'ARB', amount: 20_000_000n, recipient: randomEvmAddress() });
    await t.write('b11');
    sandbox.admin.configure({ rpcNonceLagMs: 1_500 });
    expect(await t.drive('b11', 'a')).toBe('submitted');
    expect((await sandbox.admin.outsidePermit('BASE', TEST_EVM_ADDRESS)).used).toEqual([1n]);
    expect(await t.drive('b11', 'b')).toBe('submitted');
    expect(sandbox.ledger().map((e) => e.nonce)).toEqual(['0', '2']);
    // One refusal for the one outside use: the permit at 1; then 2 went through.
    expect(sandbox.admin.requests().filter((r) => r.op === 'transfer')).toHaveLength(3);
    const rec = await t.store.load('b11', 'b');
    expect(rec?.raw['evidence']).toMatch(/the chain's nonce is 2: used elsewhere, signing again with 2/);
    expect(rec?.raw['payload_gen']).toBe('2');
  });

  it('holds an owner’s rows queued while a presumed-used permit below could still execute; once it expired unused they pay at its nonce', async () => {
    // a's deadline must outlast a's two lost sends (~1 s), b's wait for a block as new as its
    // refusal (up to ~2.3 s with whole-second timestamps) and c's run, so that b and c are seen
    // held while a's permit can still execute: 12 s leaves a busy machine ~8 s of margin (7 s
    // left ~3, and a loaded run of the suite once spent them).
    const t = await setup({
      config: { permitDeadlineSeconds: 12 } as Partial<Config>,
      policy: { ...fast, maxAmbiguousResends: 1 },
      lostAnswers: true,
    });
    for (const id of ['a', 'b', 'c'])
      t.add({ id, from: 'BASE', to: 'ETH', amount: 10_000_000n, recipient: randomEvmAddress() });
    await t.write('b12');
    // a's answers are lost (the service never acted): nonce 0 is presumed used until its deadline.
    sandbox.admin.configure({ faults: { transfer: { hang: 1 } }, hangMs: null });
    expect(await t.drive('b12', 'a')).toBe('needs_review');
    const deadline = Number((await t.store.load('b12', 'a'))?.raw['permit_deadline']) * 1000;
    sandbox.admin.configure({ faults: {} });
    const sends = () => sandbox.admin.requests().filter((r) => r.op === 'transfer').length;
    const before = sends();
    // b signs at 1; the service expects 0 and refuses; the chain is at 0, below a's live permit.
    expect((await runTransfer(t.deps, 'b12', 'b')).kind).toBe('later');
    const held = await t.store.load('b12', 'b');
    expect(held?.state).toBe('queued');
    expect(held?.raw['wait_reason']).toMatch(/b12\/a at nonce 0 lost its answer and could still execute/);
    expect(held?.raw['permit']).toBeUndefined();
    // c waits as well, without a permit sent.
    expect((await runTransfer(t.deps, 'b12', 'c')).kind).toBe('later');
    expect((await t.store.load('b12', 'c'))?.raw['wait_reason']).toMatch(/could still execute/);
    expect(sends()).toBe(before + 1);
    expect(Date.now()).toBeLessThan(deadline);
    // Past a's deadline, b's next run proves a's permit never executed, a becomes failed (safe to
    // retry), and the pool moves back to 0: b pays with 0, c with 1. Nothing was signed at 0 before.
    // (b's runs poll every 100 ms or so until a block past the deadline shows: up to ~12 s.)
    expect(await t.drive('b12', 'b', 1_000)).toBe('submitted');
    expect(await t.drive('b12', 'c')).toBe('submitted');
    expect(sandbox.ledger().map((e) => e.nonce)).toEqual(['0', '1']);
    expect((await t.store.load('b12', 'a'))?.errorCode).toBe('expired_unused');
    expect(await t.deps.evm?.nonces.doubts('BASE', TEST_EVM_ADDRESS, 0n)).toEqual([]);
  });

  it('forgets a presumed-used permit an operator resolved before its settle job ran, once a block past its deadline says so', async () => {
    const t = await setup({
      config: { permitDeadlineSeconds: 2 } as Partial<Config>,
      policy: { ...fast, maxAmbiguousResends: 1 },
      lostAnswers: true,
    });
    t.add({ id: 'a', from: 'BASE', to: 'ETH', amount: 10_000_000n, recipient: randomEvmAddress() });
    await t.write('b13');
    sandbox.admin.configure({ faults: { transfer: { hang: 1 } }, hangMs: null });
    expect(await t.drive('b13', 'a')).toBe('needs_review');
    sandbox.admin.configure({ faults: {} });
    const nonces = t.deps.evm!.nonces;
    expect(await nonces.doubts('BASE', TEST_EVM_ADDRESS, 0n)).toHaveLength(1);
    const deadline = Number((await t.store.load('b13', 'a'))?.raw['permit_deadline']) * 1000;
    // The RPC 45 s behind: its newest block stays from before the deadline for as long as the
    // checks below take, however busy the machine (the chain's own next block, stamped past the
    // deadline, would otherwise come within the second).
    sandbox.admin.configure({ rpcNonceLagMs: 45_000 });
    await new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now()) + 50));
    await resolveTransfer({ redis: client, prefix, jobs: t.jobs, actor: 'test' }, 'b13', 'a', {
      notSent: true,
    });
    // Past the deadline by the worker's clock, no block it can read is stamped past it yet: the
    // permit could still have executed for all the chain shows, and stays in the review set.
    expect((await runTransfer(t.deps, 'b13', 'a', { settleOnly: true })).kind).toBe('later');
    expect(await nonces.doubts('BASE', TEST_EVM_ADDRESS, 0n)).toHaveLength(1);
    sandbox.admin.configure({ rpcNonceLagMs: 0 });
    // The settle job comes later and finds the transfer resolved: the pool forgets its permit.
    for (let i = 0; i < 50; i++) {
      const out = await runTransfer(t.deps, 'b13', 'a', { settleOnly: true });
      if (out.kind === 'done') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(await nonces.doubts('BASE', TEST_EVM_ADDRESS, 0n)).toEqual([]);
    expect((await t.store.load('b13', 'a'))?.state).toBe('failed');
    // Nonce 0 never executed: the next permit of this owner uses it.
    const next = await setup();
    next.add({ id: 'b', from: 'BASE', to: 'ETH', amount: 10_000_000n, recipient: randomEvmAddress() });
    await next.write('b13b');
    expect(await next.drive('b13b', 'b')).toBe('submitted');
    expect(sandbox.ledger().map((e) => e.nonce)).toEqual(['0']);
  });

  it('presumes used the permit of a transfer the queue gave up on mid-send, and settles it from the chain after its deadline', async () => {
    const settles: (number | null)[] = [];
    const t = await setup({ config: { permitDeadlineSeconds: 2 } as Partial<Config> });
    const deps = {
      ...t.deps,
      hooks: { onNeedsReview: (_b: string, _t: string, at: number | null) => void settles.push(at) },
    };
    t.add({ id: 'a', from: 'BASE', to: 'ETH', amount: 10_000_000n, recipient: randomEvmAddress() });
    await t.write('b14');
    // The service executes the permit; the worker dies before recording the answer.
    const dying = {
      ...deps,
      store: {
        ...t.store,
        transition: async (...a: Parameters<typeof t.store.transition>) =>
          a[2].to === 'submitted' ? await new Promise<never>(() => {}) : await t.store.transition(...a),
      },
    };
    void runTransfer(dying, 'b14', 'a');
    await waitFor('the payment', async () => sandbox.ledger().length === 1, {
      timeoutMs: 5_000,
      intervalMs: 20,
    });
    await client.del(`${prefix}:t:b14:a:lock`);
    expect(
      await abandonTransfer(deps, await t.store.loadRun('b14', 'a'), { reason: 'stalled too often' }),
    ).toMatchObject({ kind: 'done', state: 'needs_review' });
    const rec = await t.store.load('b14', 'a');
    expect(rec?.state).toBe('needs_review');
    const deadline = Number(rec?.raw['permit_deadline']) * 1000;
    expect(settles).toEqual([deadline + fast.settleMarginMs]);
    expect(Number(rec?.raw['settle_at'])).toBe(deadline + fast.settleMarginMs);
    const nonces = t.deps.evm!.nonces;
    expect(await nonces.doubts('BASE', TEST_EVM_ADDRESS, 0n)).toEqual([
      { nonce: 0n, deadline: BigInt(deadline / 1000), holder: 'b14/a' },
    ]);
    // The settle job: from a block past the deadline, the chain shows the nonce used.
    expect(await t.drive('b14', 'a')).toBe('needs_review');
    expect((await t.store.load('b14', 'a'))?.raw['evidence']).toMatch(/the nonce was used/);
    expect(await nonces.doubts('BASE', TEST_EVM_ADDRESS, 0n)).toEqual([]);
    expect(sandbox.ledger()).toHaveLength(1);
  });

  it('after a crash between the service’s answer and recording it, re-sends the same permit (never a new one)', async () => {
    for (const replay of [true, false]) {
      await sandbox.admin.reset();
      prefix = `${prefix}r`; // a fresh nonce pool for the freshly reset sandbox
      sandbox.admin.configure({ idempotencyReplay: replay });
      const t = await setup();
      const id = replay ? 'c1' : 'c2';
      t.add({ id, from: 'ARB', to: 'BASE', amount: 4_000_000n, recipient: randomEvmAddress() });
      await t.write(`b9${id}`);
      // The "dying" worker: the service executes its permit and answers, then the process is gone
      // just before the outcome is recorded (its promise is simply abandoned). The test goes on
      // when it has got that far, however long that takes.
      let died: () => void = () => {};
      const dead = new Promise<void>((resolve) => (died = resolve));
      const dying = {
        ...t.deps,
        store: {
          ...t.store,
          transition: async (...a: Parameters<typeof t.store.transition>) => {
            if (a[2].to !== 'submitted') return await t.store.transition(...a);
            died();
            return await new Promise<never>(() => {});
          },
        },
      };
      // If the run ends without reaching the record (a busy machine timing the call out, say), the
      // test says so at once instead of waiting for ever.
      const ended = runTransfer(dying, `b9${id}`, id).then((out) => {
        throw new Error(`the dying worker ended (${JSON.stringify(out)}) before recording an answer`);
      });
      await Promise.race([dead, ended]);
      expect(sandbox.ledger()).toHaveLength(1);
      // Its locks die with it: the transfer lock and the nonce lease expire.
      await client.del(`${prefix}:t:b9${id}:${id}:lock`);
      const state = await t.drive(`b9${id}`, id);
      expect(state).toBe(replay ? 'submitted' : 'needs_review');
      await t.reportsStored(`b9${id}`, id);
      expect(sandbox.ledger()).toHaveLength(1);
      const rec = await t.store.load(`b9${id}`, id);
      expect(rec?.raw['payload_gen']).toBe('1');
    }
  });

  it('rejects a fee over MAX_FEE_USDC before signing', async () => {
    const t = await setup({ config: { maxFeeUsdc: 10_000n } as Partial<Config> });
    t.add({ id: 'a', from: 'ETH', to: 'BASE', amount: 50_000_000n, recipient: randomEvmAddress() });
    await t.write('b7');
    expect(await t.drive('b7', 'a')).toBe('rejected');
    await t.reportsStored('b7', 'a');
    const rec = await t.store.load('b7', 'a');
    expect(rec?.errorCode).toBe('fee_too_high');
    expect(rec?.raw['permit']).toBeUndefined();
  });

  it("never skips USDC's on-chain controls when they cannot be read: the transfer waits queued, unsigned, with the reason; once the RPC answers it is paid once", async () => {
    const dead = { evmRpcUrl: { ...config.evmRpcUrl, BASE: 'http://127.0.0.1:9/' } } as Partial<Config>;
    const down = await setup({ config: dead });
    down.add({ id: 'a', from: 'ETH', to: 'BASE', amount: 9_000_000n, recipient: randomEvmAddress() });
    await down.write('b-onchain');
    for (let i = 0; i < 3; i++) {
      const out = await runTransfer(down.deps, 'b-onchain', 'a');
      expect(out).toMatchObject({ kind: 'later', wait: 'retry' });
      expect(out.kind === 'later' && out.reason).toMatch(/reading USDC's own controls on BASE failed/);
    }
    const waiting = await down.store.load('b-onchain', 'a');
    expect(waiting?.state).toBe('queued');
    expect(waiting?.raw['wait_reason']).toMatch(/nothing is signed until they can be read/);
    expect(waiting?.raw['permit']).toBeUndefined();
    expect(sandbox.ledger()).toEqual([]);

    const up = await setup();
    expect(await up.drive('b-onchain', 'a')).toBe('submitted');
    expect(sandbox.ledger()).toHaveLength(1);
  });

  it("reads USDC's on-chain controls of the recipient and the owner while the fee estimate is still unanswered (they overlap it), and pays once after", async () => {
    const both = { evmRpcUrl: { ...config.evmRpcUrl, ETH: sandbox.rpcUrl('ETH') } } as Partial<Config>;
    const t = await setup({ config: both, lostAnswers: true });
    const recipient = randomEvmAddress();
    t.add({ id: 'a', from: 'BASE', to: 'ETH', amount: 4_000_000n, recipient });
    await t.write('b-ahead');
    const onchain = t.deps.onchain;
    if (!onchain) throw new Error('the wiring screens on chain by default');
    const asked: string[] = [];
    const { controls } = onchain;
    const deps: PipelineDeps = {
      ...t.deps,
      onchain: {
        ...onchain,
        controls: {
          ...controls,
          blacklisted: async (chain, address) => {
            asked.push(`${chain} ${address.toLowerCase()}`);
            return await controls.blacklisted(chain, address);
          },
        },
      },
    };
    // The service never answers the estimate: the run ends at it, having signed nothing.
    sandbox.admin.configure({ faults: { estimate: { hang: 1 } }, hangMs: null });
    const out = await runTransfer(deps, 'b-ahead', 'a');
    expect(out.kind).toBe('later');
    expect(asked.sort()).toEqual([
      `BASE ${TEST_EVM_ADDRESS.toLowerCase()}`,
      `ETH ${recipient.toLowerCase()}`,
    ]);
    expect((await t.store.load('b-ahead', 'a'))?.raw['permit']).toBeUndefined();
    sandbox.admin.configure({ faults: {} });
    expect(await t.drive('b-ahead', 'a')).toBe('submitted');
    expect(sandbox.ledger()).toHaveLength(1);
  });

  it('re-submits the same signed Solana transaction after a lost answer, and pays once', async () => {
    const t = await setup();
    t.add({ id: 's', from: 'SOLANA', to: 'BASE', amount: 9_000_000n, recipient: randomEvmAddress() });
    await t.write('b8');
    sandbox.admin.configure({ faultScript: [{ op: 'submit', fault: 'reset_after' }] });
    expect(await t.drive('b8', 's')).toBe('submitted');
    const ledger = sandbox.ledger();
    expect(ledger).toHaveLength(1);
    expect((await t.store.load('b8', 's'))?.txSignature).toBe(ledger[0]?.tx_signature);
  });

  it('a run that lost its transfer lock (a stalled job, a failover) stops before it sends: the run that took the transfer over pays it once', async () => {
    const t = await setup();
    t.add({ id: 'f', from: 'BASE', to: 'ARB', amount: 4_000_000n, recipient: randomEvmAddress() });
    await t.write('fence');
    // The first run's estimate is answered only after 1.5 s (the service acts, then answers).
    sandbox.admin.configure({ faultScript: [{ op: 'estimate', fault: 'hang' }], hangMs: 1_500 });
    const first = runTransfer(t.deps, 'fence', 'f');
    await waitFor('the first run to ask for its estimate', async () =>
      sandbox.admin.requests().some((r) => r.op === 'estimate'),
    );
    // Its lock lapses meanwhile (its job stalled, or a failover lost the lock): the queue runs the
    // transfer again, and that run takes it over and pays it.
    await client.del(`${prefix}:t:fence:f:lock`);
    expect(await runTransfer(t.deps, 'fence', 'f')).toMatchObject({ kind: 'done', state: 'submitted' });
    // The first run goes on from what it had read (a transfer with no payload yet), signs a permit
    // of its own, and stops at the sending mark: the lock is not its any more.
    expect(await first).toMatchObject({ kind: 'later', wait: 'lock' });
    expect(sandbox.ledger()).toHaveLength(1);
    expect(sandbox.admin.requests().filter((r) => r.op === 'transfer')).toHaveLength(1);
    const rec = await t.store.load('fence', 'f');
    expect(rec?.state).toBe('submitted');
    expect(rec?.intentId).toBe(sandbox.ledger()[0]?.intent_id);
  });

  describe('when Redis applies a command and its reply is lost (the client re-sends it on reconnect)', () => {
    let cutter: ReplyCutter;
    let viaCutter: Redis;
    beforeAll(async () => {
      cutter = await startReplyCutter(redis.port);
      // The worker's own connection settings (auto-pipelining, re-sends after a reconnect).
      viaCutter = createRedis({ redisUrl: cutter.url }, { role: 'worker' });
    });
    afterAll(async () => {
      viaCutter?.disconnect();
      await cutter?.close();
    });

    it('answers a re-sent state change as the first time, and counts it once', async () => {
      const t = await setup({ redis: viaCutter });
      t.add({ id: 'a', from: 'SOLANA', to: 'BASE', amount: 1_000_000n, recipient: randomEvmAddress() });
      t.add({ id: 'b', from: 'SOLANA', to: 'BASE', amount: 2_000_000n, recipient: randomEvmAddress() });
      await t.write('r1');
      // Loads the script into Redis, so the cut hits the run that applies the change.
      expect((await t.store.transition('r1', 'b', { expected: ['queued'], to: 'in_progress' })).ok).toBe(
        true,
      );
      const cut = cutter.cutReplyTo('in_progress', 'queued', 'r1');
      const moved = await t.store.transition('r1', 'a', { expected: ['queued'], to: 'in_progress' });
      await cut;
      expect(cutter.cuts()).toBeGreaterThan(0);
      expect(moved).toMatchObject({ ok: true, previous: 'queued', completedGeneration: null });
      expect(moved.ok && moved.record?.state).toBe('in_progress');
      const batch = await client.hgetall(`${prefix}:batch:r1`);
      expect([batch['n_queued'], batch['n_in_progress']]).toEqual(['0', '2']);
      // A later, different change of the same transfer is not taken for the replay.
      const again = await t.store.transition('r1', 'a', { expected: ['queued'], to: 'in_progress' });
      expect(again).toEqual({ ok: false, current: 'in_progress' });
    });

    it('keeps a processing lock whose reply was lost', async () => {
      const t = await setup({ redis: viaCutter });
      const cut = cutter.cutReplyTo('tok-1');
      expect(await t.store.lock('r2', 'a', 'tok-1', 30_000)).toBe(true);
      await cut;
      expect(await client.get(`${prefix}:t:r2:a:lock`)).toBe('tok-1');
      expect(await t.store.lock('r2', 'a', 'tok-2', 30_000)).toBe(false);
    });

    it('takes a transfer once when the reply of its take was lost: the lock stays its, counted once', async () => {
      const t = await setup({ redis: viaCutter });
      t.add({ id: 'a', from: 'SOLANA', to: 'BASE', amount: 1_000_000n, recipient: randomEvmAddress() });
      t.add({ id: 'b', from: 'SOLANA', to: 'BASE', amount: 2_000_000n, recipient: randomEvmAddress() });
      await t.write('r3');
      // Loads the script into Redis, so the cut hits the run that takes `a`.
      expect(await t.store.take('r3', 'b', { token: 'tok-b', ttlMs: 30_000 }, true)).toMatchObject({
        locked: true,
        paused: false,
      });
      const cut = cutter.cutReplyTo('tok-a');
      const taken = await t.store.take('r3', 'a', { token: 'tok-a', ttlMs: 30_000 }, true);
      await cut;
      expect(cutter.cuts()).toBeGreaterThan(0);
      expect(taken.locked && taken.record?.state).toBe('in_progress');
      expect(await client.get(`${prefix}:t:r3:a:lock`)).toBe('tok-a');
      const batch = await client.hgetall(`${prefix}:batch:r3`);
      expect([batch['n_queued'], batch['n_in_progress']]).toEqual(['0', '2']);
      expect(await t.store.take('r3', 'a', { token: 'tok-other', ttlMs: 30_000 }, true)).toEqual({
        locked: false,
      });
    });

    it.each([
      ['SOLANA', 'BASE'],
      ['ARB', 'SOLANA'],
    ] as const)(
      'pays a %s transfer once when the reply to its move to in_progress is lost',
      async (from, to) => {
        const t = await setup({ redis: viaCutter });
        const recipient = to === 'SOLANA' ? randomSolanaAddress() : randomEvmAddress();
        t.add({ id: 'a', from, to, amount: 4_000_000n, recipient });
        t.add({ id: 'w', from, to, amount: 1_000_000n, recipient: randomEvmAddress() });
        const batchId = `r3${from}`;
        await t.write(batchId);
        await t.store.transition(batchId, 'w', { expected: ['queued'], to: 'in_progress' });
        const cut = cutter.cutReplyTo('in_progress', 'queued', batchId);
        expect(await t.drive(batchId, 'a')).toBe('submitted');
        await cut;
        const rec = await t.store.load(batchId, 'a');
        const ledger = sandbox.ledger().filter((e) => e.recipient === recipient);
        expect(ledger).toHaveLength(1);
        expect(rec?.intentId).toBe(ledger[0]?.intent_id);
      },
    );
  });
  it('a recipient removed while its batch is in flight: the signed transfer is paid, the unsigned one is held, approve pays it once', async () => {
    const t = await setup();
    const [a, b] = [randomEvmAddress(), randomEvmAddress()];
    const ops = { redis: client, prefix, actor: 'cli:ops' };
    await addRecipient(ops, a, 'alice');
    await addRecipient(ops, b, 'bob');
    t.add({ id: 'signed', from: 'BASE', to: 'ARB', amount: 7_000_000n, recipient: a });
    t.add({ id: 'unsigned', from: 'BASE', to: 'ARB', amount: 8_000_000n, recipient: b });
    await t.write('race');
    // Both addresses leave the book at the moment the first transfer's signed permit is on its way
    // to the service: after it was signed, before the second transfer has started.
    const service = t.deps.service;
    let removed = false;
    const deps: PipelineDeps = {
      ...t.deps,
      service: {
        ...service,
        transfer: async (req, options) => {
          if (!removed) {
            removed = true;
            await removeRecipient(ops, a);
            await removeRecipient(ops, b);
          }
          return await service.transfer(req, options);
        },
      },
    };
    const drive = async (id: string) => {
      for (let i = 0; i < 200; i++) {
        const out = await runTransfer(deps, 'race', id);
        if (out.kind === 'done') return out.state;
        await new Promise((r) => setTimeout(r, Math.min(out.delayMs, 100)));
      }
      throw new Error('did not finish');
    };

    expect(await drive('signed')).toBe('submitted');
    expect(removed).toBe(true);
    // Not failed: back to queued, waiting for the batch's approval, in a new round.
    expect(await drive('unsigned')).toBe('queued');
    const held = await t.store.load('race', 'unsigned');
    expect(held).toMatchObject({ state: 'queued', attempts: 0 });
    expect(held?.raw['round']).toBe('1');
    expect(held?.waitReason).toMatch(/removed from the address book/);
    const reader = createBatchReader({ redis: client, prefix });
    const doc = await reader.status('race');
    expect(doc).toMatchObject({ held: true, complete: false, counts: { submitted: 1, queued: 1 } });
    expect(doc?.held_reason).toContain(`${b} (line 3, 8.00 USDC) was removed from the address book`);
    expect(sandbox.ledger().map((e) => e.recipient)).toEqual([a]);

    // Only approve releases it: its job is of the round it was held in; the removed addresses stay removed.
    const added: string[] = [];
    const jobs = {
      addTransfers: async (batchId: string, list: readonly { transferId: string }[], round = 0) => {
        for (const j of list) added.push(`${batchId}/${j.transferId}/r${round}`);
      },
    };
    const { digest } = await readReview(client, prefix, 'race');
    const approved = await approveBatch(
      { redis: client, prefix, jobs, actor: 'cli:approver', approvalsRequired: 1 },
      'race',
      digest,
    );
    expect(approved).toMatchObject({ released: 1, recipientsAdded: 0 });
    expect(added).toEqual(['race/unsigned/r1']);
    expect(await drive('unsigned')).toBe('submitted');
    expect(sandbox.ledger().map((e) => e.recipient)).toEqual([a, b]);
    expect((await reader.status('race'))?.held).toBe(false);
    expect((await listRecipients({ redis: client, prefix })).map((r) => r.address)).toEqual([]);
  });
});
