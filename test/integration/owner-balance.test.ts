import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../src/store/keys.ts';
import {
  createOwnerBalances,
  dropUnhashedReservation,
  ownerReserveKey,
  releaseOwnerReservation,
} from '../../src/store/owner-balance.ts';
import { startPrivateRedis, type TestRedis } from '../helpers/redis.ts';

const A = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';
const B = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const USDC = 1_000_000n;

/*
 * The owner balance reservations (src/store/owner-balance.ts) against a real Redis, two connections
 * as two worker processes: what an owner can still pay at a reading, never the same balance twice,
 * never a payment counted twice by a reading that lags, never a reading older than one used.
 */
describe('owner balance reservations', () => {
  let redis: TestRedis;
  let a: Redis;
  let b: Redis;
  let n = 0;
  const prefix = () => `ob${n}`;
  beforeAll(async () => {
    redis = await startPrivateRedis();
    a = new Redis(redis.url);
    b = new Redis(redis.url);
  });
  afterAll(async () => {
    a?.disconnect();
    b?.disconnect();
    await redis?.stop();
  });

  it('two workers never reserve the same balance: of 20 concurrent rows of 10 on 100, exactly 10 get it', async () => {
    n++;
    const [x, y] = [a, b].map((r) => createOwnerBalances({ redis: r, prefix: prefix() }));
    const reading = { balance: 100n * USDC, block: 5n };
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? x : y)!.reserve('BASE', A, { holder: `bt/${i}`, amount: 10n * USDC, named: null }, reading),
      ),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(10);
    const short = results.find((r) => !r.ok);
    expect(short).toEqual({ ok: false, stale: false, free: 0n });
    // Reserving names the owner in the transfer's record, in the same step.
    const okIndex = results.findIndex((r) => r.ok);
    expect(await a.hget(keys(prefix()).transfer('bt', String(okIndex)), 'owner')).toBe(A);
    // A re-run of a reserved row is not counted twice.
    expect(
      await x!.reserve('BASE', A, { holder: `bt/${okIndex}`, amount: 10n * USDC, named: A }, reading),
    ).toEqual({ ok: true });
    expect((await x!.pending('BASE', A)).length).toBe(10);
  });

  it('a payment counts as reserved until a reading at or after its block, however far the RPC lags', async () => {
    n++;
    const ob = createOwnerBalances({ redis: a, prefix: prefix() });
    expect(
      await ob.reserve(
        'ARB',
        A,
        { holder: 'bt/1', amount: 60n * USDC, named: null },
        { balance: 100n * USDC, block: 10n },
      ),
    ).toEqual({ ok: true });
    await ob.noteSent('ARB', A, 'bt/1', { txHash: '0xabc' });
    // Mined at block 12; the RPC still answers from block 11, where the balance is still 100.
    await ob.noteMined('ARB', A, [{ holder: 'bt/1', txHash: '0xabc', block: 12n }]);
    expect(
      await ob.reserve(
        'ARB',
        A,
        { holder: 'bt/2', amount: 60n * USDC, named: null },
        { balance: 100n * USDC, block: 11n },
      ),
    ).toEqual({
      ok: false,
      stale: false,
      free: 40n * USDC,
    });
    // At block 12 the balance shows the payment (40 left): the reservation is dropped, not subtracted twice.
    expect(
      await ob.reserve(
        'ARB',
        A,
        { holder: 'bt/2', amount: 30n * USDC, named: null },
        { balance: 40n * USDC, block: 12n },
      ),
    ).toEqual({ ok: true });
    expect((await ob.pending('ARB', A)).map((e) => e.holder)).toEqual(['bt/2']);
    // A reading older than one already used is never used: it could show money already spent. Its
    // 100 would cover 20 beside bt/2's 30; the 40 read at block 12 does not: read again.
    expect(
      await ob.reserve(
        'ARB',
        A,
        { holder: 'bt/3', amount: 20n * USDC, named: null },
        { balance: 100n * USDC, block: 11n },
      ),
    ).toEqual({
      ok: false,
      stale: true,
      floor: 12n,
    });
    // Where the balance read at block 12 covers the amount, it decides in the old reading's place
    // (another worker read there): 10 free, 10 reserved, nothing read again; then nothing is free.
    const [x, y] = [a, b].map((r) => createOwnerBalances({ redis: r, prefix: prefix() }));
    const stale = { balance: 100n * USDC, block: 11n };
    expect(await x!.reserve('ARB', A, { holder: 'bt/4', amount: 10n * USDC, named: null }, stale)).toEqual({
      ok: true,
    });
    expect(await y!.reserve('ARB', A, { holder: 'bt/5', amount: 1n, named: null }, stale)).toEqual({
      ok: false,
      stale: true,
      floor: 12n,
    });
    expect((await ob.pending('ARB', A)).map((e) => e.holder).sort()).toEqual(['bt/2', 'bt/4']);
    await ob.release('ARB', A, 'bt/4');
    // A noteMined for another transaction hash changes nothing.
    await ob.noteMined('ARB', A, [{ holder: 'bt/2', txHash: '0xother', block: 12n }]);
    expect((await ob.pending('ARB', A)).map((e) => e.holder)).toEqual(['bt/2']);
  });

  it('notes several mined transactions in one call, leaving one for another transaction or with no reservation', async () => {
    n++;
    const ob = createOwnerBalances({ redis: a, prefix: prefix() });
    const reading = { balance: 100n * USDC, block: 10n };
    for (const h of ['bt/1', 'bt/2', 'bt/3'])
      await ob.reserve('BASE', A, { holder: h, amount: 10n * USDC, named: null }, reading);
    await ob.noteSent('BASE', A, 'bt/1', { txHash: '0xa1' });
    await ob.noteSent('BASE', A, 'bt/2', { txHash: '0xa2' });
    // The run that reserved it knows the entry is there: one HSET, the same entry as the script's.
    await ob.noteSent('BASE', A, 'bt/3', { txHash: '0xa3', reserved: 10n * USDC });
    const entries = await a.hgetall(ownerReserveKey(prefix(), 'BASE', A));
    expect([entries['bt/1'], entries['bt/3']]).toEqual([`${10n * USDC}|0xa1|`, `${10n * USDC}|0xa3|`]);
    await ob.noteMined('BASE', A, [
      { holder: 'bt/1', txHash: '0xa1', block: 11n },
      { holder: 'bt/2', txHash: '0xother', block: 11n },
      { holder: 'bt/9', txHash: '0xa9', block: 11n },
      { holder: 'bt/3', txHash: '0xa3', block: 13n },
    ]);
    // Mined ones no longer count as pending; the one for another transaction does; none was made.
    expect((await ob.pending('BASE', A)).map((e) => e.holder)).toEqual(['bt/2']);
    // A reading at block 12 drops bt/1 (mined at 11) and keeps bt/3 (mined at 13) subtracted.
    expect(
      await ob.reserve(
        'BASE',
        A,
        { holder: 'bt/4', amount: 70n * USDC, named: null },
        {
          balance: 90n * USDC,
          block: 12n,
        },
      ),
    ).toEqual({ ok: true });
    expect(Object.keys(await a.hgetall(ownerReserveKey(prefix(), 'BASE', A))).sort()).toEqual([
      '_floor',
      '_floor_balance',
      'bt/2',
      'bt/3',
      'bt/4',
    ]);
  });

  it('moving a transfer to another owner drops its reservation on the first; release and the follower end them', async () => {
    n++;
    const p = prefix();
    const ob = createOwnerBalances({ redis: a, prefix: p });
    const reading = { balance: 50n * USDC, block: 1n };
    await ob.reserve('POLYGON', A, { holder: 'bt/7', amount: 20n * USDC, named: null }, reading);
    expect(await ob.reserve('POLYGON', B, { holder: 'bt/7', amount: 20n * USDC, named: A }, reading)).toEqual(
      { ok: true },
    );
    expect(await a.hget(ownerReserveKey(p, 'POLYGON', A), 'bt/7')).toBeNull();
    expect(await a.hget(keys(p).transfer('bt', '7'), 'owner')).toBe(B);

    const rec = { batchId: 'bt', id: '7', from: 'POLYGON', raw: { owner: B } };
    // Accepted with a tx hash: only a receipt and a later reading end it, not the follower.
    await ob.noteSent('POLYGON', B, 'bt/7', { txHash: '0xdef' });
    await dropUnhashedReservation(a, p, rec);
    expect(await ob.pending('POLYGON', B)).toHaveLength(1);
    // Accepted without one: the follower ends it when the intent is settled.
    await ob.noteSent('POLYGON', B, 'bt/7', { txHash: null });
    // A record that names the transaction hash was accepted with it (noted on the reservation
    // first): nothing is looked up for it.
    await dropUnhashedReservation(a, p, { ...rec, raw: { owner: B, tx_hash: 'def' } });
    expect(await ob.pending('POLYGON', B)).toHaveLength(1);
    await dropUnhashedReservation(a, p, rec);
    expect(await ob.pending('POLYGON', B)).toHaveLength(0);
    // Cancelled or failed: released.
    await ob.reserve(
      'POLYGON',
      B,
      { holder: 'bt/8', amount: 5n * USDC, named: null },
      { balance: 50n * USDC, block: 2n },
    );
    await releaseOwnerReservation(a, p, { batchId: 'bt', id: '8', from: 'POLYGON', raw: { owner: B } });
    expect(await ob.pending('POLYGON', B)).toHaveLength(0);
  });
});
