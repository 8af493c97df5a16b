import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { keccak256, parseTransaction, toFunctionSelector, type Hex } from 'viem';
import type { EvmChain } from '../../src/domain/chains.ts';

/*
 * A JSON-RPC proxy (127.0.0.1) in front of the sandbox's chains, for the CCTP road's fault tests
 * (docs/cctp.md "Exactly once on this road"). Each worker gets its own routes,
 * `<url>/<tag>/<CHAIN>` (its EVM_RPC_URL_<CHAIN>), so a test can act on one worker at an exact
 * point of its owner's transactions:
 * - every eth_sendRawTransaction is decoded (approve, burn, mint by selector; its nonce and hash)
 *   and handed to `send` before the node sees it: forward it, withhold it (never sent: the test
 *   kills the worker there, "saved, not broadcast"), or forward it and lose the answer (the
 *   connection cut: "broadcast, answer not received", or the worker killed meanwhile);
 * - a receipt found for a transaction is handed to `receipt` before it is answered;
 * - every other call is handed to `read` before the node sees it (a point between two of the run's
 *   writes: the owner's allowance read, say);
 * - a route may lag: `all` answers every read as of N blocks ago (eth_blockNumber, the head
 *   block, eth_getTransactionCount, eth_getBalance, eth_call, receipts of later blocks are null),
 *   `receipts` lags only the receipts (a load-balanced RPC whose nodes are not at one height),
 *   `history` the receipts and every read at a block number past the node behind (a block: null;
 *   a state: `header not found`), the head and the nonce at `latest` read from the node ahead.
 */

export type TxKind = 'approve' | 'burn' | 'mint' | 'other';

const KINDS: Record<string, TxKind> = {
  [toFunctionSelector('approve(address,uint256)')]: 'approve',
  [toFunctionSelector('depositForBurn(uint256,uint32,bytes32,address,bytes32,uint256,uint32)')]: 'burn',
  [toFunctionSelector('receiveMessage(bytes,bytes)')]: 'mint',
};

export type SeenSend = {
  readonly tag: string;
  readonly chain: EvmChain;
  readonly kind: TxKind;
  readonly nonce: number;
  readonly hash: string;
  readonly raw: string;
  /** What the proxy did with it (set once decided). */
  verdict?: SendVerdict;
};

/** `withhold`: never reaches the node, the connection is cut; `lose-answer`: reaches it, answer cut. */
export type SendVerdict = 'forward' | 'withhold' | 'lose-answer';

export type Lag = { readonly blocks: number; readonly what: 'all' | 'receipts' | 'history' };

export type RpcFaults = {
  /** The URL of `tag`'s route to `chain`. */
  url(tag: string, chain: EvmChain): string;
  /** `EVM_RPC_URL_<CHAIN>` of every chain through `tag`'s routes. */
  env(tag: string): Record<string, string>;
  /** Every raw transaction seen, in order. */
  readonly sends: SeenSend[];
  /** Decides each send before the node sees it; `after` runs once a forwarded one is answered by the node, before the answer goes back. */
  send: ((s: SeenSend) => SendVerdict | Promise<SendVerdict>) | undefined;
  after: ((s: SeenSend) => void | Promise<void>) | undefined;
  /** Runs before a found receipt is answered; `false`: the answer is cut (the worker was killed). */
  receipt: ((tag: string, chain: EvmChain, hash: string) => boolean | Promise<boolean>) | undefined;
  /** Runs before any other call (not a send) reaches the node: `eth_call`, `eth_getTransactionCount`, … */
  read: ((tag: string, chain: EvmChain, call: RpcCall) => void | Promise<void>) | undefined;
  /** Lag per tag. */
  readonly lags: Map<string, Lag>;
  close(): Promise<void>;
};

export type RpcCall = { jsonrpc?: string; id?: unknown; method?: string; params?: unknown[] };
type RpcAnswer = { jsonrpc: '2.0'; id: unknown; result?: unknown; error?: unknown };

async function post(target: string, body: unknown): Promise<RpcAnswer> {
  const res = await fetch(target, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return (await res.json()) as RpcAnswer;
}

const hex = (n: bigint) => `0x${n.toString(16)}`;
const HEAD_TAGS = new Set(['latest', 'pending', 'safe', 'finalized']);

/** The params of a read as of `at` (a head tag replaced by it), for the lagging route. */
function lagged(method: string, params: unknown[], at: bigint): unknown[] {
  const p = [...params];
  const index: Record<string, number> = {
    eth_getTransactionCount: 1,
    eth_getBalance: 1,
    eth_call: 1,
    eth_getBlockByNumber: 0,
  };
  const i = index[method];
  if (i === undefined) return p;
  const tag = p[i] ?? 'latest';
  if (typeof tag === 'string' && HEAD_TAGS.has(tag)) p[i] = hex(at);
  return p;
}

/** A node `at` high asked for a block or a state past it: null, or `header not found`. */
function pastBehind(
  method: string,
  params: unknown[],
  at: bigint,
): Pick<RpcAnswer, 'result' | 'error'> | undefined {
  const i = ({ eth_getBlockByNumber: 0, eth_getTransactionCount: 1 } as Record<string, number>)[method];
  const tag = i === undefined ? undefined : params[i];
  if (typeof tag !== 'string' || !tag.startsWith('0x') || BigInt(tag) <= at) return undefined;
  return method === 'eth_getBlockByNumber'
    ? { result: null }
    : { error: { code: -32000, message: 'header not found' } };
}

class Cut extends Error {}

export async function startRpcFaults(targets: Record<EvmChain, string>): Promise<RpcFaults> {
  const f: RpcFaults = {
    url: () => '',
    env: () => ({}),
    sends: [],
    send: undefined,
    after: undefined,
    receipt: undefined,
    read: undefined,
    lags: new Map(),
    close: async () => {},
  };

  async function head(chain: EvmChain): Promise<bigint> {
    return BigInt(
      (await post(targets[chain], { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' })).result as string,
    );
  }

  async function sendRaw(tag: string, chain: EvmChain, call: RpcCall): Promise<RpcAnswer> {
    const raw = String(call.params?.[0]) as Hex;
    const tx = parseTransaction(raw);
    const seen: SeenSend = {
      tag,
      chain,
      kind: KINDS[(tx.data ?? '0x').slice(0, 10)] ?? 'other',
      nonce: tx.nonce ?? 0,
      hash: keccak256(raw),
      raw,
    };
    f.sends.push(seen);
    seen.verdict = (await f.send?.(seen)) ?? 'forward';
    if (seen.verdict === 'withhold') throw new Cut();
    const answer = await post(targets[chain], call);
    await f.after?.(seen);
    if (seen.verdict === 'lose-answer') throw new Cut();
    return answer;
  }

  async function one(tag: string, chain: EvmChain, call: RpcCall): Promise<RpcAnswer> {
    const method = call.method ?? '';
    if (method === 'eth_sendRawTransaction') return await sendRaw(tag, chain, call);
    await f.read?.(tag, chain, call);
    const lag = f.lags.get(tag);
    const params = call.params ?? [];
    let at: bigint | undefined;
    if (lag && lag.blocks > 0) {
      const h = await head(chain);
      at = h > BigInt(lag.blocks) ? h - BigInt(lag.blocks) : 0n;
      if (lag.what === 'all') {
        if (method === 'eth_blockNumber') return { jsonrpc: '2.0', id: call.id, result: hex(at) };
        call = { ...call, params: lagged(method, params, at) };
      }
    }
    if (lag?.what === 'history' && at !== undefined) {
      const behind = pastBehind(method, params, at);
      if (behind) return { jsonrpc: '2.0', id: call.id, ...behind };
    }
    const answer = await post(targets[chain], call);
    if (method !== 'eth_getTransactionReceipt' || !answer.result) return answer;
    const r = answer.result as { blockNumber: string };
    if (at !== undefined && BigInt(r.blockNumber) > at) return { ...answer, result: null };
    if (f.receipt && !(await f.receipt(tag, chain, String(params[0])))) throw new Cut();
    return answer;
  }

  async function handle(req: IncomingMessage, res: ServerResponse, body: string): Promise<void> {
    const [, tag = '', chain = ''] = (req.url ?? '').split('/');
    const target = targets[chain as EvmChain];
    if (!target) {
      res.writeHead(404).end();
      return;
    }
    const parsed = JSON.parse(body) as RpcCall | RpcCall[];
    try {
      const answer = Array.isArray(parsed)
        ? await Promise.all(parsed.map((c) => one(tag, chain as EvmChain, c)))
        : await one(tag, chain as EvmChain, parsed);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    } catch (err) {
      if (err instanceof Cut) {
        req.socket.destroy();
        return;
      }
      res.writeHead(502).end(String(err));
    }
  }

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => void handle(req, res, Buffer.concat(chunks).toString()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = (tag: string, chain: EvmChain) => `http://127.0.0.1:${port}/${tag}/${chain}`;
  return Object.assign(f, {
    url,
    env: (tag: string) =>
      Object.fromEntries((Object.keys(targets) as EvmChain[]).map((c) => [`EVM_RPC_URL_${c}`, url(tag, c)])),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
