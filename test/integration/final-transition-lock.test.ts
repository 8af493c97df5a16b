import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TRANSFER_STATES } from '../../src/domain/transfer.ts';
import { luaScriptFile, runScript } from '../../src/store/lua-script.ts';
import { createTransferStore, type TransferStore } from '../../src/store/transfer-store.ts';
import { createLogger } from '../../src/log/logger.ts';
import { Later, saveStep, type Ctx } from '../../src/pipeline/context.ts';
import { finish, waitQueued } from '../../src/pipeline/outcomes.ts';
import type { PipelineDeps } from '../../src/pipeline/pipeline-deps.ts';
import { DEFAULT_POLICY } from '../../src/pipeline/policy.ts';
import { NO_REFUSAL } from '../../src/store/saved-steps.ts';
import { createSpendLimit } from '../../src/store/spend-limit.ts';
import { redisForSuite } from '../helpers/redis.ts';
import { EVM, ingestHarness, type IngestHarness } from './ingest-fixtures.ts';

/**
 * The transition that makes a transfer final frees its processing lock in the same step
 * (transfer-move.lua): whoever holds it — a run that took the transfer over while the first one
 * stalled has nothing left to do, and its next fenced save writes nothing — except when the call is a
 * re-send of a move already made, which leaves a lock taken since by another token alone.
 */
describe('the final transition frees the transfer lock', () => {
  let suite: Awaited<ReturnType<typeof redisForSuite>>;
  let h: IngestHarness;
  let store: TransferStore;
  const LOCK_MS = 60_000;

  beforeAll(async () => {
    suite = await redisForSuite();
    h = ingestHarness(suite.url);
    store = createTransferStore({ redis: h.redis, prefix: h.prefix });
  });
  afterAll(async () => {
    await h?.close();
    await suite?.close();
  });

  const lockKey = (batchId: string) => `${h.prefix}:t:${batchId}:${batchId}-r0:lock`;

  /** A one-row batch whose transfer a run with `token` has taken (in_progress, lock held). */
  async function taken(batchId: string, token: string): Promise<string> {
    const out = await h.enqueue(`id,from,to,amount,recipient,memo\n${batchId}-r0,BASE,ARB,10,${EVM[0]},x\n`, {
      batchId,
    });
    expect(out.status).toBe('enqueued');
    const id = `${batchId}-r0`;
    const t = await store.take(batchId, id, { token, ttlMs: LOCK_MS }, true);
    expect(t.locked).toBe(true);
    return id;
  }

  it("deletes the run's own lock", async () => {
    const id = await taken('own', 'run-a');
    const res = await store.transition('own', id, {
      expected: ['in_progress'],
      to: 'failed',
      unlock: 'run-a',
    });
    expect(res.ok).toBe(true);
    expect(await h.redis.exists(lockKey('own'))).toBe(0);
  });

  it('deletes the lock of a run that took the transfer over, whose fenced save then writes nothing', async () => {
    const id = await taken('over', 'run-a');
    // run-a's lock expired while it stalled; run-b took the transfer over.
    await h.redis.set(lockKey('over'), 'run-b', 'PX', LOCK_MS);
    const res = await store.transition('over', id, {
      expected: ['in_progress'],
      to: 'submitted',
      fields: { intentId: 'int-over', intentStatus: 'pending' },
      unlock: 'run-a',
    });
    expect(res.ok).toBe(true);
    expect(await h.redis.exists(lockKey('over'))).toBe(0);
    expect(await store.saveFenced('over', id, { sendState: 'sending' }, { token: 'run-b' })).toEqual({
      held: false,
    });
    expect(await h.redis.hget(`${h.prefix}:t:over:${id}`, 'send_state')).toBeNull();
  });

  it('a re-sent call of a move already made leaves a lock taken since by another token', async () => {
    const id = await taken('resent', 'run-a');
    const move = luaScriptFile('transfer-move.lua');
    const keys = [
      `${h.prefix}:t:resent:${id}`,
      `${h.prefix}:batch:resent`,
      lockKey('resent'),
      ...TRANSFER_STATES.map((state) => `${h.prefix}:batch:resent:state:${state}`),
    ];
    const args = [
      'in_progress',
      'needs_review',
      id,
      String(Date.now()),
      'submitted,failed,rejected,cancelled',
      'op-1',
      'run-a',
      '',
      '0',
    ];
    expect(((await runScript(h.redis, move, keys, args)) as unknown[])[0]).toBe(1);
    expect(await h.redis.exists(lockKey('resent'))).toBe(0);
    // A settle job's run takes the lock; then the first call's re-send (a reconnect) arrives.
    await h.redis.set(lockKey('resent'), 'run-c', 'PX', LOCK_MS);
    expect(((await runScript(h.redis, move, keys, args)) as unknown[])[0]).toBe(1);
    expect(await h.redis.get(lockKey('resent'))).toBe('run-c');
    // The re-sent call's own token still held it: freed, as the first call freed it.
    await h.redis.set(lockKey('resent'), 'run-a', 'PX', LOCK_MS);
    await runScript(h.redis, move, keys, args);
    expect(await h.redis.exists(lockKey('resent'))).toBe(0);
  });

  /**
   * Run A took the transfer (its lock token `run-a`), then its lock lapsed during a call and run B
   * took the transfer over: A's context, as the pipeline carries it, is returned with the lock set to
   * run B's token and run B's write of a new payload (`solana_signed`, `uncertain`) in the record.
   */
  async function overtaken(batchId: string): Promise<{ ctx: Ctx; key: string }> {
    const id = await taken(batchId, 'run-a');
    const t = await store.take(batchId, id, { token: 'run-a', ttlMs: LOCK_MS }, false);
    if (!t.locked || !t.record) throw new Error('run-a does not hold the transfer');
    // Only the store and a logger are used by the writes under test; the rest of a run's deps
    // (service, signers) play no part in them.
    const spendLimit = createSpendLimit({ redis: h.redis, prefix: h.prefix, cap: 1_000_000_000n });
    const deps = {
      store,
      spendLimit,
      logger: createLogger('silent'),
    } as Partial<PipelineDeps> as PipelineDeps;
    const ctx: Ctx = {
      deps,
      policy: DEFAULT_POLICY,
      now: Date.now,
      signal: new AbortController().signal,
      log: deps.logger,
      report: () => {},
      batchId,
      transferId: id,
      lock: { token: 'run-a', released: false },
      run: { rec: t.record },
    };
    // While A holds the lock its saves land (fenced-save.lua, token checked).
    await saveStep(ctx, { sendState: 'sending' });
    const key = `${h.prefix}:t:${batchId}:${id}`;
    expect(await h.redis.hget(key, 'send_state')).toBe('sending');
    await h.redis.set(lockKey(batchId), 'run-b', 'PX', LOCK_MS);
    await h.redis.hset(key, 'solana_signed', 'run-b-payload', 'uncertain', '1', 'send_state', 'idle');
    return { ctx, key };
  }

  /** What a stale run must leave as run B wrote it: its payload, its uncertainty, state, lock. */
  async function expectRunBsRecord(batchId: string, key: string): Promise<void> {
    expect(await h.redis.hmget(key, 'solana_signed', 'uncertain', 'send_state', 'state')).toEqual([
      'run-b-payload',
      '1',
      'idle',
      'in_progress',
    ]);
    expect(await h.redis.get(lockKey(batchId))).toBe('run-b');
  }

  it("a stale run's Solana rebuild clear writes nothing once another run holds the transfer", async () => {
    const { ctx, key } = await overtaken('stale-clear');
    // solana-flow.ts afterRefusedTx, decision 'rebuild'.
    const write = saveStep(ctx, { solanaSigned: null, uncertain: false });
    await expect(write).rejects.toBeInstanceOf(Later);
    await expect(write).rejects.toMatchObject({ kind: 'lock' });
    await expectRunBsRecord('stale-clear', key);
  });

  it("a stale run's EVM refusal settling neither clears the record nor fails the transfer", async () => {
    const { ctx, key } = await overtaken('stale-refusal');
    // The daily cap's room run B pays with (reserved for the transfer, whichever run took it).
    const limit = createSpendLimit({ redis: h.redis, prefix: h.prefix, cap: 1_000_000_000n });
    expect((await limit.reserve(`stale-refusal/${ctx.transferId}`, 10_000_000n)).ok).toBe(true);
    // evm-flow.ts settleRefusal: the dead permit's save, then a final `failed`.
    await expect(saveStep(ctx, { permit: null, uncertain: false, ...NO_REFUSAL })).rejects.toMatchObject({
      kind: 'lock',
    });
    const fail = finish(ctx, 'failed', { error: { code: 'refused', message: 'refused' } });
    await expect(fail).rejects.toMatchObject({ kind: 'lock' });
    await expect(waitQueued(ctx, 'daily cap', 1_000, 'retry')).rejects.toMatchObject({ kind: 'lock' });
    await expectRunBsRecord('stale-refusal', key);
    expect(await h.redis.zscore(`${h.prefix}:spend`, `stale-refusal/${ctx.transferId}`)).not.toBeNull();
  });
});
