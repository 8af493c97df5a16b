import { AsyncLocalStorage } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import { readOwnerBalance, warmOwnerBalance } from '../../src/pipeline/evm/owner-balance-reading.ts';
import { createOwnerCaches } from '../../src/pipeline/evm/owner-caches.ts';
import type { BalanceReadingAt } from '../../src/signing/types.ts';

/*
 * An owner's balance reading, shared by one worker process's owner choices
 * (pipeline/evm/owner-balance-reading.ts): the worker takes the first one as it starts, and rows
 * that need it meanwhile wait for that one instead of reading again; a failed first reading leaves
 * each row to read for itself.
 */

const OWNER = '0x00000000000000000000000000000000000000a1';

/** A chain whose `balanceOf` readings the test answers (or fails) one at a time, in order. */
function heldChain() {
  const pending: { resolve(r: BalanceReadingAt): void; reject(e: Error): void }[] = [];
  const reader = {
    usdcBalanceAtHead: () =>
      new Promise<BalanceReadingAt>((resolve, reject) => pending.push({ resolve, reject })),
  };
  const at = (balance: bigint, block: bigint): BalanceReadingAt => ({
    balance,
    block: { number: block, timestamp: 0n, hash: `0x${'0'.repeat(64)}` },
  });
  return { reader, pending, at };
}

/** One owner's reading on BASE, from a held chain, with caches of its own (one worker process). */
function oneOwner() {
  const chain = heldChain();
  return {
    chain,
    r: { caches: createOwnerCaches(), reader: chain.reader, chain: 'BASE' as const, owner: OWNER },
  };
}

const settle = () => new Promise((r) => setImmediate(r));

describe('owner balance reading', () => {
  it('a reading begun at the start serves the rows that ask for it meanwhile: one read of the chain, not one per row', async () => {
    const { chain, r } = oneOwner();
    warmOwnerBalance(r);
    const rows = [readOwnerBalance(r, false, () => {}), readOwnerBalance(r, false, () => {})];
    await settle();
    expect(chain.pending).toHaveLength(1);
    chain.pending[0]?.resolve(chain.at(7_000_000n, 12n));
    expect(await Promise.all(rows)).toEqual([
      { balance: 7_000_000n, block: 12n },
      { balance: 7_000_000n, block: 12n },
    ]);
    // Kept: a later row reads nothing; a row that asks for a fresh one reads again.
    expect(await readOwnerBalance(r, false, () => {})).toEqual({ balance: 7_000_000n, block: 12n });
    const fresh = readOwnerBalance(r, true, () => {});
    await settle();
    expect(chain.pending).toHaveLength(2);
    chain.pending[1]?.resolve(chain.at(9_000_000n, 13n));
    expect(await fresh).toEqual({ balance: 9_000_000n, block: 13n });
  });

  it('a first reading that failed is not a row’s answer: the row reads for itself', async () => {
    const { chain, r } = oneOwner();
    warmOwnerBalance(r);
    const row = readOwnerBalance(r, false, () => {});
    await settle();
    // The start's reading fails.
    chain.pending[0]?.reject(new Error('RPC down'));
    await settle();
    expect(chain.pending).toHaveLength(2);
    chain.pending[1]?.resolve(chain.at(5_000_000n, 20n));
    expect(await row).toEqual({ balance: 5_000_000n, block: 20n });
  });

  it('a start with a reading already kept reads nothing more', async () => {
    const { chain, r } = oneOwner();
    const row = readOwnerBalance(r, false, () => {});
    await settle();
    chain.pending[0]?.resolve(chain.at(1n, 3n));
    await row;
    warmOwnerBalance(r);
    await settle();
    expect(chain.pending).toHaveLength(1);
  });

  it("refreshes an old reading in the background outside the asking row's context (its trace shows no read made for all)", async () => {
    const row = new AsyncLocalStorage<string>();
    const seenIn: (string | undefined)[] = [];
    const chain = heldChain();
    const reader = {
      usdcBalanceAtHead: () => {
        seenIn.push(row.getStore());
        return chain.reader.usdcBalanceAtHead();
      },
    };
    const r = { caches: createOwnerCaches(), reader, chain: 'BASE' as const, owner: OWNER };
    const first = row.run('row A', () => readOwnerBalance(r, false, () => {}));
    await settle();
    chain.pending[0]?.resolve(chain.at(7_000_000n, 12n));
    await first;
    // Past its age, the reading still serves the next row and is read again meanwhile.
    const hit = r.caches.readings.get(`BASE|${OWNER}`);
    if (hit) hit.at -= 60_000;
    expect(await row.run('row B', () => readOwnerBalance(r, false, () => {}))).toEqual({
      balance: 7_000_000n,
      block: 12n,
    });
    await settle();
    expect(chain.pending).toHaveLength(2);
    chain.pending[1]?.resolve(chain.at(8_000_000n, 13n));
    // The row that waited for the first reading read it itself; the refresh belongs to no row.
    expect(seenIn).toEqual(['row A', undefined]);
  });
});
