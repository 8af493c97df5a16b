import { encodeAbiParameters, keccak256, toHex, type Hex } from 'viem';
import { USDC_EVM, type EvmChain, type Network } from '../domain/chains.ts';

/**
 * What the JSON-RPC endpoint reads from the sandbox's state. The sandbox's chain is a clock: block
 * `n` is mined at `n × SANDBOX_BLOCK_MS` (unix ms) and holds every state change made up to then, so
 * the state "as of a block" is the state as of its time. The endpoint answers as a node `lagMs`
 * behind that chain, consistently: its head, its blocks and the state it reads all lag together.
 */
export type RpcState = {
  readonly network: Network;
  /** How far this node is behind the chain the service executes on (`rpcNonceLagMs`). */
  lagMs(): number;
  /** `nonces(owner)` as of unix ms `atMs`. */
  nonceAt(chain: EvmChain, owner: string, atMs: number): bigint;
  /** `balanceOf(owner)` as of unix ms `atMs`. */
  balanceAt(chain: EvmChain, owner: string, atMs: number): bigint;
  /** The sandbox's clock (tests may not replace Date.now). */
  now?(): number;
};

/** Five blocks a second: fine enough that a node without lag shows a permit at once. */
export const SANDBOX_BLOCK_MS = 200;

type RpcReply = { jsonrpc: '2.0'; id: unknown; result?: unknown; error?: { code: number; message: string } };

const SELECTOR = {
  nonces: '0x7ecebe00',
  name: '0x06fdde03',
  version: '0x54fd4d50',
  balanceOf: '0x70a08231',
  decimals: '0x313ce567',
} as const;

const uint256 = (v: bigint): Hex => encodeAbiParameters([{ type: 'uint256' }], [v]);
const str = (v: string): Hex => encodeAbiParameters([{ type: 'string' }], [v]);

/** The newest block mined at least `lagMs` ago. */
export function headBlock(nowMs: number, lagMs: number): bigint {
  return BigInt(Math.floor((nowMs - lagMs) / SANDBOX_BLOCK_MS));
}

export function blockTimeMs(block: bigint): number {
  return Number(block) * SANDBOX_BLOCK_MS;
}

/** A block header as nodes answer `eth_getBlockByNumber(n, false)`, with the fields readers use. */
export function blockHeader(chainId: number, block: bigint): Record<string, unknown> {
  const hashOf = (n: bigint) => keccak256(toHex(`sandbox:${chainId}:${n}`));
  return {
    number: toHex(block),
    hash: hashOf(block),
    parentHash: hashOf(block - 1n),
    timestamp: toHex(Math.floor(blockTimeMs(block) / 1000)),
    nonce: '0x0000000000000000',
    difficulty: '0x0',
    gasLimit: '0x1c9c380',
    gasUsed: '0x0',
    miner: '0x0000000000000000000000000000000000000000',
    extraData: '0x',
    baseFeePerGas: '0x0',
    transactions: [],
    uncles: [],
  };
}

/**
 * A block parameter (`latest`, `safe`, `finalized`, `pending`, `earliest`, a hex number, or
 * EIP-1898's `{ blockNumber }`) against this node's head: the block, `future` for one it has not
 * seen, or `invalid`.
 */
export function resolveBlock(param: unknown, head: bigint): bigint | 'future' | 'invalid' {
  if (param === undefined) return head;
  const value =
    typeof param === 'object' && param !== null ? (param as Record<string, unknown>)['blockNumber'] : param;
  if (typeof value !== 'string') return 'invalid';
  if (['latest', 'safe', 'finalized', 'pending'].includes(value)) return head;
  if (value === 'earliest') return 0n;
  if (!/^0x[0-9a-fA-F]{1,16}$/.test(value)) return 'invalid';
  const n = BigInt(value);
  return n > head ? 'future' : n;
}

/** The address argument of a one-address call (`nonces`, `balanceOf`); undefined when malformed. */
function addressArg(data: string): string | undefined {
  const arg = data.slice(10);
  if (!/^[0-9a-fA-F]{64}$/.test(arg) || !/^0{24}$/.test(arg.slice(0, 24))) return undefined;
  return `0x${arg.slice(24).toLowerCase()}`;
}

function one(state: RpcState, chain: EvmChain, req: unknown): RpcReply {
  const r = (typeof req === 'object' && req !== null ? req : {}) as Record<string, unknown>;
  const id = r['id'] ?? null;
  const fail = (code: number, message: string): RpcReply => ({
    jsonrpc: '2.0',
    id,
    error: { code, message },
  });
  const ok = (result: unknown): RpcReply => ({ jsonrpc: '2.0', id, result });
  if (r['jsonrpc'] !== '2.0' || typeof r['method'] !== 'string') return fail(-32600, 'invalid request');
  const deployment = USDC_EVM[state.network][chain];
  const params = Array.isArray(r['params']) ? r['params'] : [];
  const head = headBlock((state.now ?? Date.now)(), state.lagMs());
  switch (r['method']) {
    case 'eth_chainId':
      return ok(`0x${deployment.chainId.toString(16)}`);
    case 'net_version':
      return ok(String(deployment.chainId));
    case 'eth_blockNumber':
      return ok(toHex(head));
    case 'eth_getBlockByNumber': {
      const block = resolveBlock(params[0], head);
      if (block === 'invalid') return fail(-32602, 'invalid block number');
      // A node answers null for a block it has not seen yet.
      return ok(block === 'future' ? null : blockHeader(deployment.chainId, block));
    }
    case 'eth_call': {
      const call = params[0] as Record<string, unknown> | undefined;
      const to = typeof call?.['to'] === 'string' ? call['to'].toLowerCase() : '';
      const data =
        typeof call?.['data'] === 'string'
          ? call['data']
          : typeof call?.['input'] === 'string'
            ? call['input']
            : '';
      const block = resolveBlock(params[1], head);
      if (block === 'invalid') return fail(-32602, 'invalid block number');
      if (block === 'future') return fail(-32000, 'header not found');
      const atMs = blockTimeMs(block);
      // Any other contract is an account without code: a call returns nothing.
      if (to !== deployment.usdc.toLowerCase()) return ok('0x');
      const selector = data.slice(0, 10).toLowerCase();
      if (selector === SELECTOR.name) return ok(str(deployment.eip712Name));
      if (selector === SELECTOR.version) return ok(str(deployment.eip712Version));
      if (selector === SELECTOR.decimals) return ok(uint256(6n));
      if (selector === SELECTOR.nonces || selector === SELECTOR.balanceOf) {
        const owner = addressArg(data);
        if (!owner) return fail(3, 'execution reverted');
        return ok(
          uint256(
            selector === SELECTOR.nonces
              ? state.nonceAt(chain, owner, atMs)
              : state.balanceAt(chain, owner, atMs),
          ),
        );
      }
      return fail(3, 'execution reverted');
    }
    default:
      return fail(-32601, `method ${String(r['method']).slice(0, 40)} is not supported by the sandbox`);
  }
}

/**
 * JSON-RPC 2.0 (single or batch) for USDC on one chain: eth_chainId, eth_blockNumber,
 * eth_getBlockByNumber, and eth_call of nonces/name/version/balanceOf at a block.
 */
export function handleRpc(state: RpcState, chain: EvmChain, body: unknown): unknown {
  if (Array.isArray(body)) return body.map((b) => one(state, chain, b));
  return one(state, chain, body);
}
