import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/config.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { signingKeys } from '../../src/signing/evm/keystore.ts';
import type { TransferRequest } from '../../src/domain/transfer.ts';
import type { PermitPayload } from '../../src/service/types.ts';
import { createLogger } from '../../src/log/logger.ts';
import { DEFAULT_POLICY } from '../../src/pipeline/policy.ts';
import { runTransfer, type PipelineDeps, type StepOutcome } from '../../src/pipeline/run-transfer.ts';
import { createSandbox, type Sandbox } from '../../src/sandbox/sandbox.ts';
import type { RedisNonceManager } from '../../src/signing/evm/nonce-manager.ts';
import type { NonceLease, NonceManager } from '../../src/signing/types.ts';
import { writeBatchWithJobs } from '../../src/ingest/job-hand-off.ts';
import { createReplicaAcks, type ReplicaAcks } from '../../src/store/replica-acks.ts';
import { readDailySpend } from '../../src/store/spend-limit.ts';
import { createTransferStore } from '../../src/store/transfer-store.ts';
import { wireEvm, wirePipeline, wireServiceClient, wireSolana } from '../../src/worker/pipeline-wiring.ts';
import { waitFor } from '../helpers/cli.ts';
import { randomEvmAddress } from '../helpers/fixtures.ts';
import { startPrivateRedis, type TestRedis } from '../helpers/redis.ts';
import { TEST_EVM_ADDRESS, TEST_EVM_KEY } from '../helpers/sandbox.ts';

/**
 * A permit prepared while another holder's permit is in flight, through the real pipeline, against
 * the real sandbox (in process, on its anvil chains) and a real Redis. The in-flight holder is played
 * by the test through the nonce manager, so each case decides what happens to nonce n.
 */
describe('pipeline: the prepared next permit', () => {
  let redis: TestRedis;
  let client: Redis;
  let sandbox: Sandbox;
  let config: Config;
  let prefix: string;
  let n = 0;
  const nonces: RedisNonceManager[] = [];
  const acksMade: ReplicaAcks[] = [];

  beforeAll(async () => {
    // DEBUG CHANGE-REPL-ID: what a promotion does to the primary's replication id (a failover).
    redis = await startPrivateRedis({ extraArgs: ['--enable-debug-command', 'local'] });
    client = new Redis(redis.url);
    sandbox = await createSandbox({ port: 0 });
    config = loadConfig(
      {
        TRANSFER_API_URL: sandbox.url,
        TRANSFER_API_KEY: sandbox.apiKey,
        PERMIT_SPENDER: sandbox.spender,
        EVM_PRIVATE_KEY: TEST_EVM_KEY,
        EVM_RPC_URL_BASE: sandbox.rpcUrl('BASE'),
      },
      { keys: signingKeys },
    );
  });
  afterAll(async () => {
    for (const m of nonces) await m.close();
    for (const a of acksMade) await a.close();
    client?.disconnect();
    await sandbox?.close();
    await redis?.stop();
  });
  beforeEach(async () => {
    await sandbox.admin.reset();
    prefix = `pp${++n}`;
  });

  /**
   * The pipeline's deps, one transfer row written, and the test's own hand on the nonce pool. With
   * `acks`, the replica acknowledgements a worker wires (it learns the primary at its start): the
   * pipeline then knows where it saves a permit unsent.
   */
  async function setup(batchId: string, options: { acks?: boolean; dailyCap?: bigint } = {}) {
    const store = createTransferStore({ redis: client, prefix });
    let acks: ReplicaAcks | undefined;
    if (options.acks) {
      acks = createReplicaAcks({ redis: client, prefix, setting: 'auto', timeoutMs: 2_000 });
      acksMade.push(acks);
      await acks.site();
    }
    const logger = createLogger('silent');
    const capped = options.dailyCap === undefined ? config : { ...config, maxDailyUsdc: options.dailyCap };
    const on = { config: capped, redis: client, prefix, logger };
    // The worker's own EVM parts (src/worker/pipeline-wiring.ts); the test watches their nonce pool.
    const evm = wireEvm(on)!;
    const manager = evm.nonces;
    nonces.push(manager);
    // The nonces the pool offered the transfer to prepare, whatever it made of the offer.
    const offers: bigint[] = [];
    const watched: NonceManager = {
      ...manager,
      acquire: (c, owner, holder, options = {}) => {
        const { prepare } = options;
        return manager.acquire(c, owner, holder, {
          ...options,
          ...(prepare ? { prepare: (nonce: bigint) => (offers.push(nonce), prepare(nonce)) } : {}),
        });
      },
    };
    const deps: PipelineDeps = wirePipeline({
      ...on,
      store,
      acks,
      service: wireServiceClient(on),
      evm: { ...evm, nonces: watched },
      solana: await wireSolana(on),
      policy: { ...DEFAULT_POLICY, leaseWaitMs: 60_000 },
    });
    // The records as ingest writes them; this test runs the transfers itself, so no job is added.
    const writer = {
      redis: client,
      prefix,
      fingerprint: (t: TransferRequest) => `${t.recipient}${t.amount}`,
      jobs: { addTransfers: async () => {} },
    };
    const row: TransferRequest = {
      id: 'p',
      from: 'BASE',
      to: 'ARB',
      amount: 4_000_000n,
      recipient: randomEvmAddress(),
      line: 2,
      hasPayoutId: true,
      memo: null,
    };
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
        transfers: [row],
        dropped: [],
      },
      { onOwnedPayout: 'strict' },
    );
    return { deps, store, manager, offers };
  }

  /** The test's holder takes nonce 0; the transfer then runs, and prepares nonce 1 while it waits. */
  async function preparedBehind(t: Awaited<ReturnType<typeof setup>>, batchId: string) {
    const holder: NonceLease = await t.manager.acquire('BASE', TEST_EVM_ADDRESS, 'other/holder');
    expect(holder.nonce).toBe(0n);
    const run: Promise<StepOutcome> = runTransfer(t.deps, batchId, 'p');
    const rec = await waitFor(
      'the transfer to prepare nonce 1',
      async () => {
        const r = await t.store.load(batchId, 'p');
        return r?.raw['prepared'] === '1' ? r : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 20 },
    );
    return { holder, run, rec };
  }

  async function transferRequests(): Promise<number> {
    return sandbox.admin.requests().filter((r) => r.op === 'transfer').length;
  }

  it('saves the prepared permit unsent, and sends it on the hand-off once nonce 0 is accepted', async () => {
    const t = await setup('hand');
    const { holder, run, rec } = await preparedBehind(t, 'hand');
    // Prepared, saved, and provably not sent: no `sending` mark, no send counted, nothing at the service.
    expect(rec.raw['permit_nonce']).toBe('1');
    expect(rec.raw['send_state'] ?? '').toBe('');
    expect(rec.raw['sends'] ?? '0').toBe('0');
    expect(rec.attempts).toBe(0);
    expect(rec.raw['payload_gen']).toBe('1');
    expect(await transferRequests()).toBe(0);
    expect(await t.manager.state('BASE', TEST_EVM_ADDRESS)).toMatchObject({
      holder: 'other/holder',
      prepHolder: 'hand/p',
      prepNonce: 1n,
    });

    // Nonce 0 is used at the service (by the "other" holder) and accepted: commit hands over.
    await sandbox.admin.outsidePermit('BASE', TEST_EVM_ADDRESS);
    await holder.commit();
    const out = await run;
    expect(out).toMatchObject({ kind: 'done', state: 'submitted' });
    const done = await t.store.load('hand', 'p');
    expect(done?.raw).toMatchObject({ sends: '1', payload_gen: '1', permit_nonce: '1' });
    // No longer marked prepared-and-unsent (a submitted record keeps no such mark at all).
    expect(done?.raw['prepared'] ?? '').toBe('');
    expect(done?.raw['prepared_at']).toMatch(/^\d+$/);
    expect(done?.attempts).toBe(1);
    const ledger = sandbox.ledger().filter((e) => e.kind === 'evm');
    expect(ledger.map((e) => [e.nonce, e.intent_id])).toEqual([['1', done?.intentId]]);
    expect(ledger[0]?.idempotency_key).toBe('hand/p/1');
    expect(await transferRequests()).toBe(1);
    expect(t.offers).toEqual([1n]);
    expect((await t.manager.state('BASE', TEST_EVM_ADDRESS)).handoffs).toBe(1);
  });

  it('discards the prepared permit and signs again when nonce 0 is released instead of committed', async () => {
    const t = await setup('rel');
    const { holder, run } = await preparedBehind(t, 'rel');
    // The other holder's permit 0 was refused (or never sent): 0 goes back to the pool.
    await holder.release();
    const out = await run;
    expect(out).toMatchObject({ kind: 'done', state: 'submitted' });
    const done = await t.store.load('rel', 'p');
    // The prepared permit (nonce 1) never reached the service; a new one with nonce 0 paid.
    // It takes the unsent permit's payload number (its Idempotency-Key): the keys of a transfer's
    // sent payloads have no gap.
    expect(done?.raw).toMatchObject({ permit_nonce: '0', payload_gen: '1', sends: '1' });
    expect(done?.raw['prepared'] ?? '').toBe('');
    expect(done?.raw['prepared_at'] ?? '').toBe('');
    expect(done?.raw['evidence']).toContain('discarded prepared permit with nonce 1 (lease nonce is 0)');
    expect(sandbox.ledger().map((e) => [e.nonce, e.idempotency_key])).toEqual([['0', 'rel/p/1']]);
    expect(await transferRequests()).toBe(1);
    expect((await t.manager.state('BASE', TEST_EVM_ADDRESS)).handoffs).toBe(0);
  });

  it('discards a prepared permit whose nonce an outside signer took before it was sent, and pays with a fresh one (the record is authoritative: no failover since it was saved)', async () => {
    const t = await setup('out', { acks: true });
    const { holder, run, rec } = await preparedBehind(t, 'out');
    expect(rec.raw['unsent_site']).toMatch(/^[0-9a-f]{40}$/);
    // The owner signs elsewhere: nonces 0 and 1 are used on chain, by payloads this project never
    // made. The holder's permit 0 is refused for it and goes back; the lease comes to the transfer
    // at nonce 0, not its prepared permit's 1.
    await sandbox.admin.outsidePermit('BASE', TEST_EVM_ADDRESS);
    await sandbox.admin.outsidePermit('BASE', TEST_EVM_ADDRESS);
    await holder.release();
    const out = await run;
    expect(out).toMatchObject({ kind: 'done', state: 'submitted' });
    const done = await t.store.load('out', 'p');
    expect(done?.raw['evidence']).toContain('discarded prepared permit with nonce 1 (lease nonce is 0)');
    expect(done?.raw['evidence']).not.toContain('may have paid');
    // Paid once, with a nonce the outside signer had not used.
    const paid = sandbox.ledger().filter((e) => e.kind === 'evm');
    expect(paid.map((e) => e.intent_id)).toEqual([done?.intentId]);
    expect(Number(paid[0]?.nonce)).toBeGreaterThanOrEqual(2);
  });

  for (const lost of ['unknown', 'other'] as const) {
    const where =
      lost === 'unknown'
        ? 'where it was saved is not recorded (a record from before the field)'
        : 'it was saved on a primary that has since failed over';
    it(`never discards a prepared permit the chain shows used when its sending mark may be lost (${where}): needs_review with the reading`, async () => {
      const batchId = `lost${lost}`;
      // Without replica acknowledgements wired the pipeline does not know where it saves.
      const t = await setup(batchId, { acks: lost === 'other' });
      const { holder, run, rec } = await preparedBehind(t, batchId);
      expect(rec.raw['unsent_site'] ?? null).toEqual(lost === 'other' ? expect.any(String) : null);
      // What a failover to a replica that missed the mark leaves: the prepared permit (nonce 1) was
      // sent and paid, but the record shows it prepared and unsent. (Nonce 0 is used first, outside.)
      // The promoted replica's replication id is new.
      if (lost === 'other') await client.call('DEBUG', 'CHANGE-REPL-ID');
      await sandbox.admin.outsidePermit('BASE', TEST_EVM_ADDRESS);
      const permit = JSON.parse(rec.raw['permit'] as string) as PermitPayload;
      await t.deps.service.transfer(
        { from: 'BASE', to: 'ARB', amount: 4_000_000n, recipient: rec.recipient, permit },
        { idempotencyKey: `${batchId}/p/1` },
      );
      expect(sandbox.ledger().map((e) => e.nonce)).toEqual(['1']);
      // The holder of nonce 0 gives it back: the lease goes to the transfer at another nonce than its
      // saved permit's.
      await holder.release();
      const out = await run;
      expect(out).toMatchObject({ kind: 'done', state: 'needs_review' });
      const done = await t.store.load(batchId, 'p');
      expect(done?.raw['evidence']).toMatch(
        /nonce 1 was about to be replaced, but BASE nonces\(owner\) is 2 at block \d+/,
      );
      expect(done?.raw['evidence']).toContain(
        lost === 'unknown' ? 'where it was saved is not known' : 'Redis may have lost its sending mark',
      );
      expect(done?.raw['permit_nonce']).toBe('1');
      // Paid once: no new permit was signed for it.
      expect(sandbox.ledger().map((e) => e.nonce)).toEqual(['1']);
    });
  }

  it('never prepares over a payload that may have been processed: it waits and re-sends that one', async () => {
    const t = await setup('unc');
    // An earlier run sent a permit with nonce 7 and lost the answer: it may have moved money.
    const before = await t.deps.evm!.signers[0]!.signPermit({
      chain: 'BASE',
      amount: 4_000_000n,
      nonce: 7n,
      deadline: BigInt(Math.floor(Date.now() / 1000) + 1800),
    });
    await t.store.save('unc', 'p', { permit: before, payloadGen: 1, sends: 1, uncertain: true });
    const holder = await t.manager.acquire('BASE', TEST_EVM_ADDRESS, 'other/holder');
    const run = runTransfer(t.deps, 'unc', 'p');
    // It is offered the slot and declines: the slot is free again for another waiter, its record
    // stays as it was.
    await waitFor('the offer', async () => t.offers.length > 0, { intervalMs: 20 });
    expect(t.offers).toEqual([1n]);
    await waitFor(
      'the slot freed',
      async () => (await t.manager.state('BASE', TEST_EVM_ADDRESS)).prepHolder === null,
      { intervalMs: 20 },
    );
    const rec = await t.store.load('unc', 'p');
    expect(rec?.raw).toMatchObject({ permit_nonce: '7', payload_gen: '1', uncertain: '1' });
    expect(rec?.raw['prepared'] ?? '').toBe('');
    await holder.release();
    // It re-sends nonce 7 identically (the chain refuses it: nonce 0 is next) and, its earlier send
    // possibly processed, ends needs_review — never a new permit.
    const out = await run;
    expect(out).toMatchObject({ kind: 'done', state: 'needs_review' });
    expect((await t.store.load('unc', 'p'))?.raw).toMatchObject({ permit_nonce: '7', payload_gen: '1' });
    expect(sandbox.ledger()).toHaveLength(0);
  });

  it('takes the daily cap while it prepares: saved with the prepared permit, so the hand-off sends at once', async () => {
    const t = await setup('capd', { dailyCap: 10_000_000n });
    const { holder, run, rec } = await preparedBehind(t, 'capd');
    // Reserved before the permit was signed and saved in the same write: the turn finds it taken.
    expect(rec.raw).toMatchObject({ permit_nonce: '1', spend_reserved: '1' });
    expect(await readDailySpend(client, prefix, Date.now())).toBe(4_000_000n);
    await sandbox.admin.outsidePermit('BASE', TEST_EVM_ADDRESS);
    await holder.commit();
    expect(await run).toMatchObject({ kind: 'done', state: 'submitted' });
    // Counted once under the cap, whatever step took it.
    expect(await readDailySpend(client, prefix, Date.now())).toBe(4_000_000n);
    expect(sandbox.ledger().map((e) => e.nonce)).toEqual(['1']);
  });

  it('prepares nothing when the daily cap has no room: its turn waits queued for the cap, nothing signed', async () => {
    const t = await setup('capf', { dailyCap: 3_000_000n });
    const holder = await t.manager.acquire('BASE', TEST_EVM_ADDRESS, 'other/holder');
    const run = runTransfer(t.deps, 'capf', 'p');
    // Offered the slot, it declines (no room under the cap for its 4 USDC): the slot is free again.
    await waitFor('the offer', async () => t.offers.length > 0, { intervalMs: 20 });
    await waitFor(
      'the slot freed',
      async () => (await t.manager.state('BASE', TEST_EVM_ADDRESS)).prepHolder === null,
      { intervalMs: 20 },
    );
    const rec = await t.store.load('capf', 'p');
    expect(rec?.raw['permit_nonce'] ?? '').toBe('');
    expect(rec?.raw['spend_reserved'] ?? '').toBe('');
    await holder.release();
    // Its turn: the cap still has no room, so it waits queued with the reason, the lease given back.
    expect(await run).toMatchObject({ kind: 'later', wait: 'daily_cap' });
    expect((await t.store.load('capf', 'p'))?.state).toBe('queued');
    expect(await readDailySpend(client, prefix, Date.now())).toBe(0n);
    expect((await t.manager.state('BASE', TEST_EVM_ADDRESS)).holder).toBeNull();
    expect(sandbox.ledger()).toHaveLength(0);
  });
});
