import { Redis } from 'ioredis';
import { createPublicClient, http, recoverTransactionAddress, type Hex, type PublicClient } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Secret } from '../../src/config/config.ts';
import { USDC_EVM, type EvmChain } from '../../src/domain/chains.ts';
import { startAnvil, type AnvilProcess } from '../../src/sandbox/evm/anvil-process.ts';
import {
  createOwnerTxSender,
  OwnerTxSignedError,
  OwnerTxUnprovenError,
  type OwnerCall,
  type OwnerTxSender,
  type OwnerTxStep,
} from '../../src/signing/evm/owner-tx/owner-tx-sender.ts';
import { keys } from '../../src/store/keys.ts';
import {
  assignNonce,
  callDataDigest,
  markDone,
  nextNonce,
  nonceOfCall,
  readOwnerTx,
  saveSigned,
} from '../../src/store/owner-txs.ts';
import { createReplicaAcks, type ReplicaAcks } from '../../src/store/replica-acks.ts';
import { startReplicatedRedis, type ReplicatedRedis } from '../../support/replicated-redis.ts';
import { startRpcFaults } from '../helpers/rpc-faults.ts';
import { startRpcRecorder, type RpcRecorder } from '../helpers/rpc-recorder.ts';

/*
 * docs/cctp.md "The owner's transactions", on a real anvil (the sandbox's ETH chain id) and a real
 * replicated Redis: every transaction is signed for real and judged by the chain. Every broadcast
 * goes through a recording proxy that checks, before the node sees it, that the REPLICA already
 * holds the signed transaction (saved, and held by the replicas, before it is sent).
 */

const CHAIN = 'ETH' as const;
const CHAIN_ID = USDC_EVM.testnet.ETH.chainId;
const SINK = '0x000000000000000000000000000000000000dEaD';
const GWEI = 1_000_000_000n;
const PREFIX = 'otx-test';

describe('an owner’s own transactions on a real chain', () => {
  let anvil: AnvilProcess;
  let chain: PublicClient;
  let recorder: RpcRecorder;
  let rr: ReplicatedRedis;
  let replica: Redis;
  const opened: { redis: Redis; acks: ReplicaAcks }[] = [];
  /** Broadcasts the replica did not hold when the node was about to get them. */
  const unsaved: string[] = [];

  const rpc = (method: string, params: unknown[] = []) =>
    chain.request({ method: method as never, params: params as never });
  const mine = () => rpc('evm_mine');
  const automine = (on: boolean) => rpc('evm_setAutomine', [on]);
  const setBaseFee = (wei: bigint) => rpc('anvil_setNextBlockBaseFeePerGas', [`0x${wei.toString(16)}`]);
  const fund = (address: string, wei: bigint) => rpc('anvil_setBalance', [address, `0x${wei.toString(16)}`]);

  async function newOwner(balance = 10n ** 19n) {
    const key = generatePrivateKey();
    const address = privateKeyToAccount(key).address;
    await fund(address, balance);
    return { key, address };
  }

  /** A sender as a worker process makes it: its own Redis connection and replica acknowledgements. */
  function senderFor(
    key: string,
    extra: { maxGasWei?: bigint; ackTimeoutMs?: number; url?: string; unprovenAfterMs?: number } = {},
  ): OwnerTxSender {
    const redis = new Redis(rr.url, { maxRetriesPerRequest: 1 });
    const timeoutMs = extra.ackTimeoutMs ?? 5_000;
    const acks = createReplicaAcks({ redis, prefix: PREFIX, setting: 'auto', timeoutMs });
    opened.push({ redis, acks });
    return createOwnerTxSender({
      redis,
      prefix: PREFIX,
      acks,
      config: {
        network: 'testnet',
        evmRpcUrl: { [CHAIN]: extra.url ?? recorder.url },
        maxGasWei: extra.maxGasWei === undefined ? {} : { [CHAIN]: extra.maxGasWei },
        evmPrivateKeys: [new Secret(key)],
      },
      repriceAfterBlocks: 2,
      pollingIntervalMs: 10,
      ...(extra.unprovenAfterMs === undefined ? {} : { unprovenAfterMs: extra.unprovenAfterMs }),
    });
  }

  const callOf = (id: string, value: bigint): OwnerCall => ({ id, to: SINK, data: '0x', value });

  /** Steps the call until it is mined or replaced, mining a block whenever it waits for one. */
  async function drive(sender: OwnerTxSender, owner: string, call: OwnerCall): Promise<OwnerTxStep> {
    for (let i = 0; i < 20; i++) {
      const step = await sender.step(CHAIN, owner, call);
      if (step.kind === 'mined' || step.kind === 'replaced-by-other') return step;
      if (step.kind === 'waiting' && step.reason !== 'pending') return step;
      if (step.kind === 'waiting') await mine();
    }
    throw new Error(`${call.id} was neither mined nor replaced after 20 steps`);
  }

  const chainNonce = async (owner: string) =>
    BigInt(await chain.getTransactionCount({ address: owner as Hex, blockTag: 'latest' }));
  const where = (owner: string) => ({ prefix: PREFIX, chain: CHAIN, owner });

  beforeAll(async () => {
    anvil = await startAnvil({ chainId: CHAIN_ID });
    chain = createPublicClient({ transport: http(anvil.url), pollingInterval: 10 });
    rr = await startReplicatedRedis();
    replica = new Redis(rr.replica.url, { maxRetriesPerRequest: 1 });
    recorder = await startRpcRecorder(anvil.url);
    recorder.beforeSend = async (raw) => {
      const from = await recoverTransactionAddress({ serializedTransaction: raw as never });
      const held = await replica.hvals(keys(PREFIX).ownerTxs(CHAIN, from));
      if (!held.includes(raw)) unsaved.push(raw);
    };
  }, 60_000);

  afterEach(async () => {
    await automine(true);
    recorder.dropSends = false;
    expect(unsaved, 'a transaction reached the node before the replica held it').toEqual([]);
  });

  afterAll(async () => {
    for (const o of opened) {
      await o.acks.close();
      o.redis.disconnect();
    }
    replica?.disconnect();
    await recorder?.close();
    await rr?.stop();
    await anvil?.stop();
  });

  it('gives two concurrent senders of one owner nonces in order, with no gap, each call mined once', async () => {
    const owner = await newOwner();
    const a = senderFor(owner.key);
    const b = senderFor(owner.key);
    const calls = [1n, 2n, 3n, 4n, 5n, 6n].map((v) => callOf(`pay-${v}`, v));
    await Promise.all(calls.map((c, i) => (i % 2 === 0 ? a : b).step(CHAIN, owner.address, c)));
    const steps = await Promise.all(calls.map((c) => drive(a, owner.address, c)));
    const nonces: bigint[] = [];
    for (const [i, step] of steps.entries()) {
      expect(step).toMatchObject({ kind: 'mined', success: true, filler: false });
      const tx = await chain.getTransaction({ hash: (step as { hash: Hex }).hash });
      expect(tx.value).toBe(calls[i]?.value);
      expect(tx.to?.toLowerCase()).toBe(SINK.toLowerCase());
      nonces.push(BigInt(tx.nonce));
      expect(await nonceOfCall(opened[0]!.redis, where(owner.address), calls[i]!.id)).toBe(BigInt(tx.nonce));
    }
    expect(nonces.sort((x, y) => Number(x - y))).toEqual([0n, 1n, 2n, 3n, 4n, 5n]);
    expect(await chainNonce(owner.address)).toBe(6n);
    // A call asked again gets its nonce back, never a new one.
    expect(await a.step(CHAIN, owner.address, calls[0]!)).toMatchObject({ kind: 'mined' });
    expect(await nextNonce(opened[0]!.redis, where(owner.address))).toBe(6n);
    // A call id names one call: asked with another value, it is refused, nothing sent.
    await expect(a.step(CHAIN, owner.address, { ...calls[0]!, value: 1000n })).rejects.toThrow(
      /was saved as another call/,
    );
  });

  it('two senders of one call at once: one nonce, one signed version, sent by both, mined once', async () => {
    const owner = await newOwner();
    const a = senderFor(owner.key);
    const b = senderFor(owner.key);
    const call = callOf('twice', 77n);
    await automine(false);
    const [x, y] = await Promise.all([
      a.step(CHAIN, owner.address, call),
      b.step(CHAIN, owner.address, call),
    ]);
    expect(x).toMatchObject({ kind: 'sent', nonce: 0n, version: 1 });
    expect(y).toMatchObject({ kind: 'sent', nonce: 0n, version: 1, hash: (x as { hash: string }).hash });
    const saved = await a.saved(CHAIN, owner.address, call.id);
    expect(saved!.versions).toHaveLength(1);
    await mine();
    expect(await drive(b, owner.address, call)).toMatchObject({
      kind: 'mined',
      hash: (x as { hash: string }).hash,
    });
    expect(await chainNonce(owner.address)).toBe(1n);
    expect(await nextNonce(opened.at(-1)!.redis, where(owner.address))).toBe(1n);
  });

  it('re-prices a stuck transaction at its nonce with the same call, and it is mined once', async () => {
    const owner = await newOwner();
    const sender = senderFor(owner.key);
    const call = callOf('stuck', 42n);
    await automine(false);
    const first = await sender.step(CHAIN, owner.address, call);
    expect(first).toMatchObject({ kind: 'sent', version: 1, how: 'first' });
    // The base fee jumps above what the first version pays: two blocks go by without it.
    await setBaseFee(10n * GWEI);
    await mine();
    await mine();
    const repriced = await sender.step(CHAIN, owner.address, call);
    expect(repriced).toMatchObject({ kind: 'sent', version: 2, how: 'repriced' });
    const saved = await sender.saved(CHAIN, owner.address, call.id);
    const [v1, v2] = saved!.versions;
    expect(v2!.maxFee).toBeGreaterThanOrEqual(v1!.maxFee + v1!.maxFee / 10n);
    expect(v2!.tip).toBeGreaterThanOrEqual(v1!.tip + v1!.tip / 10n);
    await mine();
    const done = await drive(sender, owner.address, call);
    expect(done).toMatchObject({ kind: 'mined', success: true, hash: v2!.hash });
    const tx = await chain.getTransaction({ hash: v2!.hash as Hex });
    expect({ nonce: tx.nonce, to: tx.to?.toLowerCase(), value: tx.value, input: tx.input }).toEqual({
      nonce: 0,
      to: SINK.toLowerCase(),
      value: 42n,
      input: '0x',
    });
    await expect(chain.getTransactionReceipt({ hash: v1!.hash as Hex })).rejects.toThrow();
    expect(await chainNonce(owner.address)).toBe(1n);
  });

  it('once mined, a transaction keeps which call it was and how it went, not its signed bytes: the same call is mined, another under its id refused, nothing saved at its nonce again', async () => {
    const owner = await newOwner();
    const sender = senderFor(owner.key);
    const redis = opened.at(-1)!.redis;
    const call: OwnerCall = { id: 'kept', to: SINK, data: '0xdeadbeef', value: 3n };
    await automine(false);
    const sent = await sender.step(CHAIN, owner.address, call);
    expect(sent).toMatchObject({ kind: 'sent', nonce: 0n, version: 1 });
    const hash = (sent as { hash: Hex }).hash;
    await mine();
    expect(await drive(sender, owner.address, call)).toMatchObject({ kind: 'mined', success: true, hash });
    const key = keys(PREFIX).ownerTxs(CHAIN, owner.address);
    const fields = Object.keys(await redis.hgetall(key)).sort();
    expect(fields).toEqual(['0:1:fees', '0:1:hash', '0:call', '0:cd', '0:done', '0:to', '0:v', '0:value']);
    const kept = await sender.saved(CHAIN, owner.address, call.id);
    expect(kept).toMatchObject({
      nonce: 0n,
      callId: 'kept',
      to: SINK,
      value: 3n,
      filled: false,
      done: { hash, success: true },
      versions: [{ version: 1, hash }],
    });
    // The digest kept is the calldata's the chain executed.
    const tx = await chain.getTransaction({ hash });
    expect(kept?.done ? kept.dataDigest : undefined).toBe(callDataDigest(tx.input));
    // Stepped again, the same call is mined (nothing sent); another call saved under its id is
    // refused; a version a run signed before it was noted mined is not saved.
    const sends = recorder.sends.length;
    expect(await sender.step(CHAIN, owner.address, call)).toMatchObject({ kind: 'mined', hash });
    expect(recorder.sends.length).toBe(sends);
    await expect(sender.step(CHAIN, owner.address, { ...call, data: '0xdeadbeee' })).rejects.toThrow(
      /was saved as another call/,
    );
    const late = {
      nonce: 0n,
      version: 2,
      kind: 'call',
      raw: '0x02',
      hash: '0x03',
      maxFee: 9n,
      tip: 1n,
    } as const;
    expect(await saveSigned(redis, where(owner.address), late)).toEqual({ kind: 'behind', versions: 1 });
    expect(Object.keys(await redis.hgetall(key)).sort()).toEqual(fields);
  });

  it('a transaction noted mined before records were trimmed reads as mined, and is trimmed when noted again', async () => {
    const owner = await newOwner();
    const redis = opened.at(-1)!.redis;
    const w = where(owner.address);
    const fields = { to: SINK, data: '0xabcd', value: 1n, gas: 30_000n };
    await assignNonce(redis, w, 'older', 0n, fields);
    const v1 = {
      nonce: 0n,
      version: 1,
      kind: 'call',
      raw: '0x01',
      hash: '0x0a',
      maxFee: 5n,
      tip: 2n,
    } as const;
    expect(await saveSigned(redis, w, v1)).toMatchObject({ kind: 'saved' });
    // What the worker wrote before: the receipt noted beside everything sending needed.
    await redis.hset(keys(PREFIX).ownerTxs(CHAIN, owner.address), '0:done', '0x0a|1');
    const older = await readOwnerTx(redis, w, 0n);
    expect(older).toEqual({
      nonce: 0n,
      callId: 'older',
      to: SINK,
      value: 1n,
      filled: false,
      dataDigest: callDataDigest('0xABCD'),
      versions: [{ version: 1, hash: '0x0a', maxFee: 5n, tip: 2n }],
      done: { hash: '0x0a', success: true },
    });
    await markDone(redis, w, { nonce: 0n, data: '0xabcd' }, { hash: '0x0a', success: true });
    expect(await readOwnerTx(redis, w, 0n)).toEqual(older);
    expect(await redis.hexists(keys(PREFIX).ownerTxs(CHAIN, owner.address), '0:1:raw')).toBe(0);
  });

  it('never pays above MAX_GAS_GWEI_<CHAIN>: nothing is signed above it, a stuck one waits at it', async () => {
    const owner = await newOwner();
    const cap = 3n * GWEI;
    const sender = senderFor(owner.key, { maxGasWei: cap });
    const call = callOf('capped', 7n);
    await automine(false);
    await setBaseFee(10n * GWEI);
    await mine();
    const refused = await sender.step(CHAIN, owner.address, call);
    expect(refused).toMatchObject({ kind: 'waiting', reason: 'gas-cap', nonce: undefined });
    expect((refused as { detail: string }).detail).toContain('MAX_GAS_GWEI_ETH (3 gwei)');
    expect(await nonceOfCall(opened.at(-1)!.redis, where(owner.address), call.id)).toBeUndefined();
    await setBaseFee(GWEI / 2n);
    await mine();
    expect(await sender.step(CHAIN, owner.address, call)).toMatchObject({ kind: 'sent', version: 1 });
    await setBaseFee(20n * GWEI);
    await mine();
    await mine();
    const held = await sender.step(CHAIN, owner.address, call);
    expect(held).toMatchObject({ kind: 'waiting', reason: 'gas-cap', nonce: 0n });
    await setBaseFee(GWEI / 2n);
    await mine();
    expect(await drive(sender, owner.address, call)).toMatchObject({ kind: 'mined', success: true });
    const saved = await sender.saved(CHAIN, owner.address, call.id);
    for (const v of saved!.versions) expect(v.maxFee).toBeLessThanOrEqual(cap);
  });

  it('an owner without native gas waits with that reason, and is given no nonce until it can pay', async () => {
    const owner = await newOwner(0n);
    const sender = senderFor(owner.key);
    const call = callOf('starved', 1n);
    const step = await sender.step(CHAIN, owner.address, call);
    expect(step).toMatchObject({ kind: 'waiting', reason: 'owner-lacks-gas', nonce: undefined });
    expect((step as { detail: string }).detail).toMatch(/^owner lacks gas: /);
    expect(await nonceOfCall(opened.at(-1)!.redis, where(owner.address), call.id)).toBeUndefined();
    await fund(owner.address, 10n ** 18n);
    expect(await drive(sender, owner.address, call)).toMatchObject({ kind: 'mined', success: true });
  });

  it('fills the nonce of a call given up before it was signed with a zero-value self-transaction', async () => {
    const owner = await newOwner();
    const sender = senderFor(owner.key);
    const redis = opened.at(-1)!.redis;
    // A run was given nonce 0 for its call, then its transfer was given up before anything was signed.
    const fields = { to: SINK, data: '0x', value: 5n, gas: 21_000n };
    await assignNonce(redis, where(owner.address), 'given-up', 0n, fields);
    const next = callOf('after-the-gap', 6n);
    expect(await sender.step(CHAIN, owner.address, next)).toMatchObject({ kind: 'sent', nonce: 1n });
    await mine();
    expect(await sender.step(CHAIN, owner.address, next)).toMatchObject({
      kind: 'waiting',
      reason: 'pending',
    });
    expect(await chainNonce(owner.address)).toBe(0n);
    const fill = await sender.abandon(CHAIN, owner.address, 'given-up');
    expect(fill).toMatchObject({ kind: 'sent', nonce: 0n });
    const filled = await drive(sender, owner.address, callOf('given-up', 5n));
    expect(filled).toMatchObject({ kind: 'mined', success: true, filler: true });
    const tx = await chain.getTransaction({ hash: (filled as { hash: Hex }).hash });
    expect({ to: tx.to, value: tx.value, input: tx.input, nonce: tx.nonce }).toEqual({
      to: owner.address.toLowerCase(),
      value: 0n,
      input: '0x',
      nonce: 0,
    });
    expect(await drive(sender, owner.address, next)).toMatchObject({ kind: 'mined', success: true });
    expect(await chainNonce(owner.address)).toBe(2n);
    // A signed call is only ever sent: it cannot be given up.
    await expect(sender.abandon(CHAIN, owner.address, next.id)).rejects.toBeInstanceOf(OwnerTxSignedError);
  });

  it('after a crash between the save and the broadcast, the restarted sender sends the same bytes', async () => {
    const owner = await newOwner();
    const call = callOf('crash', 9n);
    recorder.dropSends = true;
    const before = await senderFor(owner.key).step(CHAIN, owner.address, call);
    expect(before).toMatchObject({ kind: 'waiting', reason: 'pending', nonce: 0n });
    recorder.dropSends = false;
    const restarted = senderFor(owner.key);
    const after = await restarted.step(CHAIN, owner.address, call);
    expect(after).toMatchObject({
      kind: 'sent',
      nonce: 0n,
      version: 1,
      hash: (before as { hash: string }).hash,
    });
    expect(await drive(restarted, owner.address, call)).toMatchObject({
      kind: 'mined',
      hash: (before as { hash: string }).hash,
    });
    const mine_ = recorder.sends.filter((s) => s.raw === recorder.sends.at(-1)!.raw);
    expect(mine_.map((s) => s.forwarded)).toEqual([false, true]);
    expect(await chainNonce(owner.address)).toBe(1n);
    expect(await nextNonce(opened.at(-1)!.redis, where(owner.address))).toBe(1n);
  });

  it('sends nothing while the replicas do not hold the signed transaction, then the saved one', async () => {
    const owner = await newOwner();
    const sender = senderFor(owner.key, { ackTimeoutMs: 300 });
    const call = callOf('unreplicated', 11n);
    const sends = recorder.sends.length;
    rr.link.close();
    try {
      const step = await sender.step(CHAIN, owner.address, call);
      expect(step).toMatchObject({ kind: 'waiting', reason: 'replicas', nonce: 0n });
      expect((step as { detail: string }).detail).toContain('0 of 1 acknowledged');
      expect(recorder.sends.length).toBe(sends);
    } finally {
      rr.link.mend();
    }
    await rr.inSync();
    const saved = await sender.saved(CHAIN, owner.address, call.id);
    const sent = await sender.step(CHAIN, owner.address, call);
    expect(sent).toMatchObject({ kind: 'sent', version: 1, hash: saved!.versions[0]!.hash });
    expect(await drive(sender, owner.address, call)).toMatchObject({ kind: 'mined', success: true });
  });

  it('a nonce used by a transaction that is not ours: replaced by another, the call can never execute', async () => {
    const owner = await newOwner();
    const call = callOf('outrun', 3n);
    recorder.dropSends = true;
    const saved = await senderFor(owner.key).step(CHAIN, owner.address, call);
    expect(saved).toMatchObject({ kind: 'waiting', nonce: 0n });
    recorder.dropSends = false;
    // Someone else, holding the same key, spends nonce 0 first.
    const outside = privateKeyToAccount(owner.key as Hex);
    const raw = await outside.signTransaction({
      type: 'eip1559',
      chainId: CHAIN_ID,
      nonce: 0,
      to: SINK,
      value: 999n,
      gas: 21_000n,
      maxFeePerGas: 50n * GWEI,
      maxPriorityFeePerGas: GWEI,
    });
    const other = await chain.sendRawTransaction({ serializedTransaction: raw });
    const otherBlock = (await chain.waitForTransactionReceipt({ hash: other })).blockNumber;
    const sender = senderFor(owner.key);
    // Found, but its block is not final (anvil finalizes 64 blocks behind the head): a reorg could
    // still drop it and let ours execute, so nothing else is signed yet.
    const early = await sender.step(CHAIN, owner.address, call);
    expect(early).toMatchObject({ kind: 'waiting', nonce: 0n });
    expect((early as { detail: string }).detail).toContain(
      `held by another transaction, ${other} in block ${otherBlock}, not final yet`,
    );
    // Blocks go by: the holder's block is final, and it is searched below the head (past the first
    // bound of 64 blocks).
    for (let i = 0; i < 100; i++) await mine();
    const step = await sender.step(CHAIN, owner.address, call);
    expect(step).toMatchObject({
      kind: 'replaced-by-other',
      nonce: 0n,
      chainNonce: 1n,
      holder: { hash: other, block: otherBlock },
    });
    expect((step as { holder: { finalized: bigint } }).holder.finalized).toBeGreaterThanOrEqual(otherBlock);
    expect((step as { hashes: readonly string[] }).hashes).toEqual([(saved as { hash: string }).hash]);
  });

  it('a receipt of our mined transaction hidden by an RPC behind, for many blocks: found as ours in its block, never replaced', async () => {
    const owner = await newOwner();
    // Reads through a balancer whose receipts come from a node 40 blocks behind (Arbitrum: 10 s).
    const faults = await startRpcFaults({ [CHAIN]: recorder.url } as Record<EvmChain, string>);
    try {
      faults.lags.set('behind', { blocks: 40, what: 'receipts' });
      const sender = senderFor(owner.key, { url: faults.url('behind', CHAIN) });
      const call = callOf('hidden', 4n);
      const sent = await sender.step(CHAIN, owner.address, call);
      expect(sent).toMatchObject({ kind: 'sent', nonce: 0n, version: 1 });
      const hash = (sent as { hash: string }).hash;
      const block = (await chain.waitForTransactionReceipt({ hash: hash as Hex })).blockNumber;
      // More blocks than the 12 the old belief waited before judging the nonce another's.
      const steps: OwnerTxStep[] = [];
      for (let i = 0; i < 20; i++) {
        await mine();
        steps.push(await sender.step(CHAIN, owner.address, call));
      }
      expect(steps.map((x) => x.kind)).toEqual(steps.map(() => 'waiting'));
      for (const step of steps) {
        expect(step).toMatchObject({ kind: 'waiting', reason: 'pending', nonce: 0n });
        expect((step as { detail: string }).detail).toContain(
          `held by this call's ${hash}, mined in block ${block}`,
        );
      }
      expect(faults.sends.map((x) => x.hash)).toEqual([hash]);
      faults.lags.delete('behind');
      expect(await sender.step(CHAIN, owner.address, call)).toMatchObject({
        kind: 'mined',
        hash,
        success: true,
      });
      expect(await chainNonce(owner.address)).toBe(1n);
    } finally {
      await faults.close();
    }
  });

  it('the holder of a used nonce unreadable (blocks and states past a node behind): waits, then fails unproven with the evidence, never replaced', async () => {
    const owner = await newOwner();
    const faults = await startRpcFaults({ [CHAIN]: recorder.url } as Record<EvmChain, string>);
    try {
      faults.lags.set('history', { blocks: 40, what: 'history' });
      const sender = senderFor(owner.key, { url: faults.url('history', CHAIN), unprovenAfterMs: 1 });
      const call = callOf('unreadable', 5n);
      const sent = await sender.step(CHAIN, owner.address, call);
      const hash = (sent as { hash: string }).hash;
      await mine();
      const first = await sender.step(CHAIN, owner.address, call);
      expect(first).toMatchObject({ kind: 'waiting', reason: 'pending', nonce: 0n });
      expect((first as { detail: string }).detail).toMatch(
        /cannot be read yet \(.*eth_getTransactionCount failed/,
      );
      const seen = await sender.saved(CHAIN, owner.address, call.id);
      expect(seen && !seen.done ? seen.usedSeenAtMs : undefined).toBeDefined();
      await mine();
      const unproven = sender.step(CHAIN, owner.address, call);
      await expect(unproven).rejects.toBeInstanceOf(OwnerTxUnprovenError);
      await expect(unproven).rejects.toThrow(
        new RegExp(`nonce 0 of ${owner.address} on ETH is used .*${hash}`),
      );
      expect(faults.sends.map((x) => x.hash)).toEqual([hash]);
      faults.lags.delete('history');
      expect(await sender.step(CHAIN, owner.address, call)).toMatchObject({ kind: 'mined', hash });
    } finally {
      await faults.close();
    }
  });

  // Last: it fails the Redis over (the primary killed, the replica promoted) for the cases after it.
  it("a failover between reading a call's nonce and reading its record: the step begins again on the promoted replica, never USDC_OWNER_TX_RECORD, mined once", async () => {
    const owner = await newOwner();
    const sender = senderFor(owner.key, { ackTimeoutMs: 300 });
    const redis = opened.at(-1)!.redis;
    const call = callOf('straddle', 13n);
    await rr.inSync();
    // The call gets its nonce and a signed version on the primary alone: not held, so not sent.
    rr.link.cut();
    const first = await sender.step(CHAIN, owner.address, call);
    expect(first).toMatchObject({ kind: 'waiting', reason: 'replicas', nonce: 0n });
    const sends = recorder.sends.length;
    // The next step reads the call's nonce from that primary; the failover comes right after.
    const hget = redis.hget.bind(redis);
    let failedOver = false;
    redis.hget = (async (key: string, field: string) => {
      const v = await hget(key, field);
      if (!failedOver && field === `c:${call.id}`) {
        failedOver = true;
        expect(v).toBe('0');
        await rr.failover();
        for (;;) if ((await redis.ping().catch(() => undefined)) === 'PONG') break;
      }
      return v;
    }) as typeof redis.hget;
    const step = await sender.step(CHAIN, owner.address, call);
    expect(failedOver).toBe(true);
    expect(step).toMatchObject({ kind: 'sent', nonce: 0n, version: 1, how: 'first' });
    expect(await drive(sender, owner.address, call)).toMatchObject({ kind: 'mined', success: true });
    // One transaction of the owner reached the node: the one the promoted replica holds.
    expect(new Set(recorder.sends.slice(sends).map((x) => x.raw)).size).toBe(1);
    expect(await chainNonce(owner.address)).toBe(1n);
  });
});
