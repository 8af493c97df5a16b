import { AsyncLocalStorage } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import { createChainReader } from '../../src/signing/evm/chain-reader.ts';

/*
 * USDC's `isBlacklisted` reads of many transfers at once (chain-reader.ts, busy-batch.ts,
 * blacklist-reads.ts): while one read is in flight the next go together, in one `eth_call` that asks
 * USDC about each address, or — where the node refuses it — in one JSON-RPC batch of one `eth_call`
 * each; every read is answered on its own: a blacklisted recipient is never read as clear because
 * another read shared its request. The code of the one `eth_call` runs on a real chain in
 * test/integration/worker-guards.test.ts; here the RPC answers it as that code does.
 */

type RpcCall = { id: number; method: string; params: [{ to?: string; data: string }, unknown] };

const WORD_TRUE = `0x${'0'.repeat(63)}1`;
const WORD_FALSE = `0x${'0'.repeat(64)}`;

/** The address an `isBlacklisted(address)` call asks about (the last 20 bytes of its argument). */
const addressOf = (c: RpcCall) => `0x${c.params[0].data.slice(-40)}`;

/** Whether a call is the one `eth_call` that reads many: code to run, no contract called. */
const readsAll = (c: RpcCall) => c.params[0].to === undefined;

/**
 * The addresses the one `eth_call` asks about: the words after its code (whose first instruction
 * pushes the code's length) and after USDC's address.
 */
function addressesOfAll(c: RpcCall): string[] {
  const data = c.params[0].data;
  const args = data.slice(2 + 2 * parseInt(data.slice(4, 6), 16) + 64);
  return (args.match(/.{64}/g) ?? []).map((w) => `0x${w.slice(24)}`);
}

/** What a request asked about: an address, the addresses of the one call (`{ all }`), or a batch's. */
const askedOf = (r: RpcCall | RpcCall[]): unknown =>
  Array.isArray(r) ? r.map(addressOf) : readsAll(r) ? { all: addressesOfAll(r) } : addressOf(r);

type Answer = { result: string } | { error: string } | undefined;

/**
 * An RPC whose answers the test releases one request at a time; `answer` says what each address's
 * call gets (an `error`, a `result`, or `undefined`: left out of a batch's answer). The one call that
 * reads many answers as its code does: each address's word, or a revert when one of them fails; a
 * node that does not `runCode` refuses it.
 */
function heldRpc(answer: (address: string) => Answer, options: { runCode?: boolean } = {}) {
  const requests: (RpcCall | RpcCall[])[] = [];
  const held: (() => void)[] = [];
  const reply = (c: RpcCall, a: Answer) => {
    if (a === undefined) return undefined;
    return 'error' in a
      ? { jsonrpc: '2.0', id: c.id, error: { code: -32000, message: a.error } }
      : { jsonrpc: '2.0', id: c.id, result: a.result };
  };
  const all = (c: RpcCall): Answer => {
    if (options.runCode === false) return { error: 'contract creation is not supported' };
    const words = addressesOfAll(c).map(answer);
    if (words.some((w) => w === undefined || 'error' in w)) return { error: 'execution reverted' };
    return { result: `0x${words.map((w) => (w as { result: string }).result.slice(2)).join('')}` };
  };
  const one = (c: RpcCall) => reply(c, readsAll(c) ? all(c) : answer(addressOf(c)));
  const fetch = (async (_url: unknown, init?: RequestInit) => {
    const body = JSON.parse(String(init?.body)) as RpcCall | RpcCall[];
    requests.push(body);
    await new Promise<void>((release) => held.push(release));
    const replied = Array.isArray(body)
      ? // Answers out of order: they are matched by id.
        body
          .map(one)
          .filter((a) => a !== undefined)
          .reverse()
      : (one(body) ?? { jsonrpc: '2.0', id: body.id, error: { code: -32600, message: 'no batches' } });
    return new Response(JSON.stringify(replied));
  }) as typeof globalThis.fetch;
  const release = async (): Promise<void> => {
    for (let i = 0; i < 100 && held.length === 0; i++) await new Promise((r) => setImmediate(r));
    held.shift()?.();
  };
  return { fetch, requests, release, held };
}

const A = '0x00000000000000000000000000000000000000aa';
const B = '0x00000000000000000000000000000000000000bb';
const C = '0x00000000000000000000000000000000000000cc';
const D = '0x00000000000000000000000000000000000000dd';
/** The i-th of many distinct addresses. */
const addressNo = (i: number) => `0x${(0x1000 + i).toString(16).padStart(40, '0')}`;

const readerOn = (fetch: typeof globalThis.fetch) =>
  createChainReader({
    config: { evmRpcUrl: { ETH: 'http://rpc.invalid/' }, network: 'mainnet' },
    fetch,
    timeoutMs: 10_000,
  });

/** Lets the reads issued so far reach the RPC. */
const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

describe('isBlacklisted reads under load', () => {
  it('sends the reads asked for during one in flight as one eth_call asking USDC about each, each answered on its own', async () => {
    const rpc = heldRpc((a) => ({ result: a === B ? WORD_TRUE : WORD_FALSE }));
    const reader = readerOn(rpc.fetch);
    const first = reader.usdcBlacklisted('ETH', A);
    await settle();
    const rest = [B, C, D].map((x) => reader.usdcBlacklisted('ETH', x).then(String, (e: Error) => e.message));
    await settle();
    // A goes alone at once; B, C and D wait for its answer.
    expect(rpc.requests).toHaveLength(1);
    await rpc.release();
    expect(await first).toBe(false);
    await rpc.release();
    expect(await Promise.all(rest)).toEqual(['true', 'false', 'false']);
    expect(rpc.requests.map(askedOf)).toEqual([A, { all: [B, C, D] }]);
    const call = rpc.requests[1] as RpcCall;
    expect(call.method).toBe('eth_call');
    expect(call.params[1]).toBe('latest');
  });

  it('sends a full request at once beside the one in flight; only the rest wait for an answer', async () => {
    const rpc = heldRpc((a) => ({ result: a === addressNo(7) ? WORD_TRUE : WORD_FALSE }));
    const reader = readerOn(rpc.fetch);
    const first = reader.usdcBlacklisted('ETH', A);
    await settle();
    // 45 runs ask while A's read is in flight: two full requests of 20 go now, the last 5 wait.
    const many = Array.from({ length: 45 }, (_, i) => reader.usdcBlacklisted('ETH', addressNo(i)));
    await settle();
    expect(rpc.requests.map(askedOf)).toEqual([
      A,
      { all: Array.from({ length: 20 }, (_, i) => addressNo(i)) },
      { all: Array.from({ length: 20 }, (_, i) => addressNo(20 + i)) },
    ]);
    await rpc.release();
    await first;
    await settle();
    expect(rpc.requests.map(askedOf)[3]).toEqual({
      all: Array.from({ length: 5 }, (_, i) => addressNo(40 + i)),
    });
    for (let i = 0; i < 3; i++) await rpc.release();
    const answers = await Promise.all(many);
    expect(answers.flatMap((v, i) => (v ? [i] : []))).toEqual([7]);
    expect(rpc.requests).toHaveLength(4);
  });

  it('reads each on its own in one batch when the one eth_call reverts: only the read that failed fails', async () => {
    const rpc = heldRpc((a) =>
      a === B ? { result: WORD_TRUE } : a === D ? { error: 'execution reverted' } : { result: WORD_FALSE },
    );
    const reader = readerOn(rpc.fetch);
    const first = reader.usdcBlacklisted('ETH', A);
    await settle();
    const rest = [B, C, D].map((x) => reader.usdcBlacklisted('ETH', x).then(String, (e: Error) => e.message));
    await rpc.release();
    await first;
    await rpc.release();
    await rpc.release();
    expect(await Promise.all(rest)).toEqual(['true', 'false', expect.stringMatching(/execution reverted/)]);
    expect(rpc.requests.map(askedOf)).toEqual([A, { all: [B, C, D] }, [B, C, D]]);
    const batch = rpc.requests[2] as RpcCall[];
    expect(batch.every((c) => c.method === 'eth_call' && c.params[1] === 'latest')).toBe(true);
  });

  it('reads each on its own when the one eth_call is answered with anything but one bool per address', async () => {
    // A word that is not 0 or 1 (and a short answer): not read as "not blacklisted", read again alone.
    const rpc = heldRpc((a) => ({ result: a === C ? `0x${'0'.repeat(62)}02` : WORD_TRUE }));
    const reader = readerOn(rpc.fetch);
    const both = Promise.all(
      [A, C].map((x) => reader.usdcBlacklisted('ETH', x).then(String, (e: Error) => e.message)),
    );
    await rpc.release();
    await rpc.release();
    expect(await both).toEqual(['true', expect.stringMatching(/cannot be decoded|not a boolean/)]);
    expect(rpc.requests.map(askedOf)).toEqual([{ all: [A, C] }, [A, C]]);
  });

  it('sends the reads asked for in one turn with none in flight together: one request, not one and then the rest', async () => {
    const rpc = heldRpc((a) => ({ result: a === C ? WORD_TRUE : WORD_FALSE }));
    const reader = readerOn(rpc.fetch);
    // A run asking about all of its owners at once (pipeline/onchain-screening.ts).
    const owners = Promise.all([A, B, C].map((x) => reader.usdcBlacklisted('ETH', x)));
    await settle();
    expect(rpc.requests).toHaveLength(1);
    await rpc.release();
    expect(await owners).toEqual([false, false, true]);
    expect(rpc.requests.map(askedOf)).toEqual([{ all: [A, B, C] }]);
  });

  it('where the node refuses the one eth_call: one batch, and a call its answer left out read again alone', async () => {
    const rpc = heldRpc((a) => (a === C ? undefined : { result: a === B ? WORD_TRUE : WORD_FALSE }), {
      runCode: false,
    });
    const reader = readerOn(rpc.fetch);
    const first = reader.usdcBlacklisted('ETH', A);
    await settle();
    const rest = [B, C].map((x) => reader.usdcBlacklisted('ETH', x).then(String, (e: Error) => e.message));
    await rpc.release();
    await first;
    await rpc.release();
    await rpc.release();
    // C had no answer in the batch: it is asked alone, and its refusal is its answer.
    await rpc.release();
    expect(await Promise.all(rest)).toEqual(['true', expect.stringMatching(/no batches/)]);
    expect(rpc.requests.map(askedOf)).toEqual([A, { all: [B, C] }, [B, C], C]);
  });

  it('fails every read of a batch whose request failed, and reads the next ones again', async () => {
    let down = true;
    const rpc = heldRpc(() => ({ result: WORD_FALSE }));
    const failing = (async (url: unknown, init?: RequestInit) => {
      const res = await rpc.fetch(url as string, init);
      return down ? new Response('bad gateway', { status: 502 }) : res;
    }) as typeof globalThis.fetch;
    const reader = readerOn(failing);
    const first = reader.usdcBlacklisted('ETH', A).catch((e: Error) => e.message);
    await settle();
    const rest = [B, C].map((x) => reader.usdcBlacklisted('ETH', x).catch((e: Error) => e.message));
    await rpc.release();
    expect(await first).toMatch(/HTTP 502/);
    await rpc.release();
    expect(await Promise.all(rest)).toEqual([
      expect.stringMatching(/HTTP 502/),
      expect.stringMatching(/HTTP 502/),
    ]);
    down = false;
    const again = reader.usdcBlacklisted('ETH', B);
    await rpc.release();
    expect(await again).toBe(false);
  });

  it("makes a batch of several transfers' reads in none of their contexts, not even the first reader's", async () => {
    // A transfer's trace is its async context (queue/run-spans.ts): a read shared by several must not
    // be shown as a call of the step one of them was at — not even of the first transfer to read.
    const run = new AsyncLocalStorage<string>();
    const rpc = heldRpc(() => ({ result: WORD_FALSE }));
    const seenIn: (string | undefined)[] = [];
    const fetch = ((url: unknown, init?: RequestInit) => {
      seenIn.push(run.getStore());
      return rpc.fetch(url as string, init);
    }) as typeof globalThis.fetch;
    const reader = readerOn(fetch);
    const first = run.run('transfer A', () => reader.usdcBlacklisted('ETH', A));
    await settle();
    const rest = [
      run.run('transfer B', () => reader.usdcBlacklisted('ETH', B)),
      run.run('transfer C', () => reader.usdcBlacklisted('ETH', C)),
    ];
    await rpc.release();
    await first;
    await rpc.release();
    await Promise.all(rest);
    expect(rpc.requests.map(askedOf)).toEqual([A, { all: [B, C] }]);
    // A read alone is its caller's; the one call for B and C is nobody's.
    expect(seenIn).toEqual(['transfer A', undefined]);
  });
});
