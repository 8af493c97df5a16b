import { describe, expect, it } from 'vitest';
import { createChainNonceCache } from '../../src/signing/evm/chain-nonce-cache.ts';
import type { ChainReader } from '../../src/signing/types.ts';

const OWNER = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';

/** nonces(owner) over an RPC whose answers the test releases one by one. */
function slowRpc() {
  const waiting: ((n: bigint | undefined) => void)[] = [];
  let reads = 0;
  const reader: ChainReader = {
    permitNonce: () => {
      reads++;
      return new Promise((resolve) => waiting.push(resolve));
    },
    permitNonceAtHead: async () => undefined,
    usdcBalance: async () => undefined,
    usdcBalanceAtHead: async () => undefined,
    txBlock: async () => undefined,
  };
  return {
    reader,
    reads: () => reads,
    answer(n: bigint | undefined) {
      const next = waiting.shift();
      if (!next) throw new Error('no read under way');
      next(n);
    },
  };
}

const settledNow = async <T>(p: Promise<T>): Promise<{ value: T } | 'pending'> =>
  await Promise.race([
    p.then((value) => ({ value })),
    new Promise<'pending'>((r) => setTimeout(r, 5, 'pending')),
  ]);

describe('chain nonce cache', () => {
  it('serves the last reading to every caller while a newer one is under way', async () => {
    const rpc = slowRpc();
    const cache = createChainNonceCache({ reader: rpc.reader, maxAgeMs: 10 });
    const first = cache.read('k', 'BASE', OWNER);
    rpc.answer(4n);
    expect(await first).toBe(4n);
    await new Promise((r) => setTimeout(r, 15)); // the reading is now stale
    // The first caller starts a refresh; it and every caller after it get 4 at once, not the RPC's time.
    for (let i = 0; i < 3; i++)
      expect(await settledNow(cache.read('k', 'BASE', OWNER))).toEqual({ value: 4n });
    expect(rpc.reads()).toBe(2);
    rpc.answer(6n);
    await new Promise((r) => setTimeout(r, 1));
    expect(await cache.read('k', 'BASE', OWNER)).toBe(6n);
  });

  it('keeps the older reading when a refresh fails, and waits only when it has none', async () => {
    const rpc = slowRpc();
    const cache = createChainNonceCache({ reader: rpc.reader, maxAgeMs: 10 });
    const first = cache.read('k', 'ETH', OWNER);
    expect(await settledNow(first)).toBe('pending'); // nothing to serve yet: the caller waits
    rpc.answer(2n);
    expect(await first).toBe(2n);
    await new Promise((r) => setTimeout(r, 15));
    expect(await cache.read('k', 'ETH', OWNER)).toBe(2n);
    rpc.answer(undefined); // the refresh failed
    await new Promise((r) => setTimeout(r, 1));
    expect(await cache.read('k', 'ETH', OWNER)).toBe(2n);
  });

  it('with a max age of 0, every caller waits for its own reading', async () => {
    const rpc = slowRpc();
    const cache = createChainNonceCache({ reader: rpc.reader, maxAgeMs: 0 });
    const a = cache.read('k', 'ARB', OWNER);
    rpc.answer(1n);
    expect(await a).toBe(1n);
    const b = cache.read('k', 'ARB', OWNER);
    expect(await settledNow(b)).toBe('pending');
    rpc.answer(3n);
    expect(await b).toBe(3n);
  });
});
