import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { encodeAbiParameters, getAddress, type Hex } from 'viem';

/**
 * A real HTTP JSON-RPC endpoint answering USDC's `name()`, `version()`, `nonces(owner)`,
 * `balanceOf(owner)` and `totalSupply()` over eth_call: the chain a unit test injects, not the unit under test.
 */
export type FakeEvmRpc = {
  readonly url: string;
  name: string;
  version: string;
  readonly nonces: Map<string, bigint>;
  readonly balances: Map<string, bigint>;
  /** What `totalSupply()` answers (default: a billion USDC). */
  totalSupply: bigint;
  /** `ok` answers; `http500` fails with a status; `rpc_error` answers a JSON-RPC error; `hang` never answers. */
  mode: 'ok' | 'http500' | 'rpc_error' | 'hang';
  /** eth_call counts by selector name. */
  readonly calls: Record<string, number>;
  /** `to` of every eth_call. */
  readonly targets: string[];
  /** The block parameter of every eth_call (a tag, a number, or an EIP-1898 `{ blockHash }`). */
  readonly blockTags: unknown[];
  /** The block tag of every eth_getBlockByNumber. */
  readonly headTags: unknown[];
  /** What `eth_getBlockByNumber('latest')` answers (a header object, or null). */
  head: Record<string, unknown> | null;
  /** The Authorization header of the last request. */
  lastAuthorization: string | undefined;
  close(): Promise<void>;
};

const SELECTORS: Record<string, string> = {
  '0x06fdde03': 'name',
  '0x54fd4d50': 'version',
  '0x7ecebe00': 'nonces',
  '0x70a08231': 'balanceOf',
  '0x18160ddd': 'totalSupply',
};

export async function startFakeEvmRpc(): Promise<FakeEvmRpc> {
  const hanging = new Set<() => void>();
  const rpc: FakeEvmRpc = {
    url: '',
    name: 'USDC',
    version: '2',
    nonces: new Map(),
    balances: new Map(),
    totalSupply: 1_000_000_000_000_000n,
    mode: 'ok',
    calls: {},
    targets: [],
    blockTags: [],
    headTags: [],
    head: {
      number: '0x10',
      timestamp: `0x${Math.floor(Date.now() / 1000).toString(16)}`,
      hash: `0x${'ab'.repeat(32)}`,
    },
    lastAuthorization: undefined,
    close: async () => undefined,
  };
  const server: Server = createServer((req, res) => {
    rpc.lastAuthorization = req.headers.authorization;
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const msg = JSON.parse(body) as {
        id: number;
        method: string;
        params: [{ to: string; data: Hex }, unknown?];
      };
      if (msg.method === 'eth_getBlockByNumber') {
        rpc.calls['eth_getBlockByNumber'] = (rpc.calls['eth_getBlockByNumber'] ?? 0) + 1;
        rpc.headTags.push(msg.params[0]);
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: rpc.head }));
        return;
      }
      if (msg.method !== 'eth_call') {
        // Not a contract read (the worker's gas sampling asks eth_getBalance and eth_gasPrice): a
        // JSON-RPC error, as a node without the method answers; the reads under test are eth_calls.
        rpc.calls[msg.method] = (rpc.calls[msg.method] ?? 0) + 1;
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            jsonrpc: '2.0',
            id: msg.id,
            error: { code: -32601, message: 'method not found' },
          }),
        );
        return;
      }
      const data = msg.params[0].data;
      rpc.blockTags.push(msg.params[1] ?? '');
      const fn = SELECTORS[data.slice(0, 10)] ?? 'unknown';
      rpc.calls[fn] = (rpc.calls[fn] ?? 0) + 1;
      rpc.targets.push(msg.params[0].to);
      if (rpc.mode === 'hang') {
        hanging.add(() => res.destroy());
        return;
      }
      if (rpc.mode === 'http500') {
        res.writeHead(500).end('boom');
        return;
      }
      const reply = (payload: object) =>
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, ...payload }));
      if (rpc.mode === 'rpc_error') return reply({ error: { code: -32000, message: 'execution reverted' } });
      const owner = fn === 'nonces' || fn === 'balanceOf' ? getAddress(`0x${data.slice(34, 74)}`) : '';
      const result =
        fn === 'name'
          ? encodeAbiParameters([{ type: 'string' }], [rpc.name])
          : fn === 'version'
            ? encodeAbiParameters([{ type: 'string' }], [rpc.version])
            : fn === 'nonces'
              ? encodeAbiParameters([{ type: 'uint256' }], [rpc.nonces.get(owner) ?? 0n])
              : fn === 'balanceOf'
                ? encodeAbiParameters([{ type: 'uint256' }], [rpc.balances.get(owner) ?? 0n])
                : fn === 'totalSupply'
                  ? encodeAbiParameters([{ type: 'uint256' }], [rpc.totalSupply])
                  : '0x';
      reply({ result });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  (rpc as { url: string }).url = `http://127.0.0.1:${port}`;
  rpc.close = async () => {
    for (const h of hanging) h();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return rpc;
}
