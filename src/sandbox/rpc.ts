import { encodeAbiParameters, type Hex } from 'viem';
import { USDC_EVM, type EvmChain, type Network } from '../domain/chains.ts';

/** What the JSON-RPC endpoint reads from the sandbox's state. */
export type RpcState = {
  readonly network: Network;
  /** `nonces(owner)` as the chain shows it now (may lag behind accepted permits). */
  chainNonce(chain: EvmChain, owner: string): bigint;
  balanceOf(chain: EvmChain, owner: string): bigint;
};

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
  switch (r['method']) {
    case 'eth_chainId':
      return ok(`0x${deployment.chainId.toString(16)}`);
    case 'net_version':
      return ok(String(deployment.chainId));
    case 'eth_blockNumber':
      return ok(`0x${Math.floor(Date.now() / 1000).toString(16)}`);
    case 'eth_call': {
      const call = params[0] as Record<string, unknown> | undefined;
      const to = typeof call?.['to'] === 'string' ? call['to'].toLowerCase() : '';
      const data =
        typeof call?.['data'] === 'string'
          ? call['data']
          : typeof call?.['input'] === 'string'
            ? call['input']
            : '';
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
            selector === SELECTOR.nonces ? state.chainNonce(chain, owner) : state.balanceOf(chain, owner),
          ),
        );
      }
      return fail(3, 'execution reverted');
    }
    default:
      return fail(-32601, `method ${String(r['method']).slice(0, 40)} is not supported by the sandbox`);
  }
}

/** JSON-RPC 2.0 (single or batch) for USDC on one chain: eth_chainId, eth_call of nonces/name/version/balanceOf. */
export function handleRpc(state: RpcState, chain: EvmChain, body: unknown): unknown {
  if (Array.isArray(body)) return body.map((b) => one(state, chain, b));
  return one(state, chain, body);
}
