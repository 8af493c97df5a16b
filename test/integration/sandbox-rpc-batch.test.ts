import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnvil, type AnvilProcess } from '../../src/sandbox/evm/anvil-process.ts';
import type { AnvilChainState } from '../../src/sandbox/evm/anvil-chain-state.ts';
import { createBlockClock } from '../../src/sandbox/evm/block-clock.ts';
import { handleLaggingRpc } from '../../src/sandbox/evm/lagging-rpc.ts';
import { DEFAULT_SANDBOX_CONFIG } from '../../src/sandbox/sandbox-config.ts';

/*
 * The sandbox's `/rpc/<CHAIN>` (lagging-rpc.ts) takes a JSON-RPC batch to a real anvil as one
 * request, as a provider's node does, and answers each call under its caller's id, in the caller's
 * order — the calls it answers itself (refused methods, invalid requests) in their places.
 */

type Answer = { jsonrpc: string; id: unknown; result?: unknown; error?: { code: number; message: string } };

let anvil: AnvilProcess;
let proxy: Server;
/** The bodies anvil received through the counting proxy. */
const received: unknown[] = [];

/** An HTTP proxy in front of anvil that keeps each request body it forwards. */
function countingProxy(target: string): Promise<Server> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      received.push(JSON.parse(body) as unknown);
      const out = request(
        target,
        { method: 'POST', headers: { 'content-type': 'application/json' } },
        (r) => {
          res.writeHead(r.statusCode ?? 502, { 'content-type': 'application/json' });
          r.pipe(res);
        },
      );
      out.end(body);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

function chainState(lagMs: number): AnvilChainState {
  const { port } = proxy.address() as AddressInfo;
  return {
    deps: { config: () => ({ ...DEFAULT_SANDBOX_CONFIG, rpcNonceLagMs: lagMs }) },
    node: { ...anvil, url: `http://127.0.0.1:${port}` },
    usdc: '0x0000000000000000000000000000000000000001',
    clock: createBlockClock(0n),
  } as unknown as AnvilChainState;
}

const noMeet = { meet: async () => {} };

beforeAll(async () => {
  anvil = await startAnvil({ chainId: 84532 });
  proxy = await countingProxy(anvil.url);
});

afterAll(async () => {
  await new Promise((r) => proxy.close(r));
  await anvil.stop();
});

describe("the sandbox's RPC and JSON-RPC batches", () => {
  it("forwards a batch's calls to anvil in one request and answers each under its own id, in order", async () => {
    received.length = 0;
    const answers = (await handleLaggingRpc(
      chainState(0),
      [
        { jsonrpc: '2.0', id: 'a', method: 'eth_chainId', params: [] },
        { jsonrpc: '2.0', id: 7, method: 'anvil_setBalance', params: ['0x' + '11'.repeat(20), '0x1'] },
        { jsonrpc: '2.0', id: 7, method: 'eth_getBalance', params: ['0x' + '22'.repeat(20), 'latest'] },
        { id: 'no version', method: 'eth_chainId' },
        { jsonrpc: '2.0', id: null, method: 'eth_blockNumber', params: [] },
        { jsonrpc: '2.0', id: 'bad', method: 'eth_noSuchMethod', params: [] },
      ],
      noMeet,
    )) as Answer[];
    expect(answers.map((a) => a.id)).toEqual(['a', 7, 7, 'no version', null, 'bad']);
    expect(answers[0]?.result).toBe('0x14a34');
    expect(answers[1]?.error?.message).toMatch(/not available through the sandbox's RPC/);
    expect(answers[2]?.result).toBe('0x0');
    expect(answers[3]?.error?.code).toBe(-32600);
    expect(answers[4]?.result).toMatch(/^0x[0-9a-f]+$/);
    expect(answers[5]?.error).toBeDefined();
    // The four calls for anvil went in one batch; the refused and the invalid ones never reached it.
    expect(received).toHaveLength(1);
    expect((received[0] as { method: string }[]).map((c) => c.method)).toEqual([
      'eth_chainId',
      'eth_getBalance',
      'eth_blockNumber',
      'eth_noSuchMethod',
    ]);
  });

  it('answers a lagged head itself and forwards the rest of the batch as one request', async () => {
    received.length = 0;
    const answers = (await handleLaggingRpc(
      chainState(60_000),
      [
        { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] },
        {
          jsonrpc: '2.0',
          id: 2,
          method: 'eth_call',
          params: [{ to: '0x' + '33'.repeat(20), data: '0x' }, 'latest'],
        },
        { jsonrpc: '2.0', id: 3, method: 'eth_chainId', params: [] },
      ],
      noMeet,
    )) as Answer[];
    // The clock's baseline (block 0) is the head a minute behind.
    expect(answers).toEqual([
      { jsonrpc: '2.0', id: 1, result: '0x0' },
      { jsonrpc: '2.0', id: 2, result: '0x' },
      { jsonrpc: '2.0', id: 3, result: '0x14a34' },
    ]);
    expect(received).toHaveLength(1);
    // The call is read at the lagged head, as a number.
    expect((received[0] as { params: unknown[] }[])[0]?.params[1]).toBe('0x0');
  });
});
