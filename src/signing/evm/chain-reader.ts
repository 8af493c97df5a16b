import { decodeFunctionResult, encodeFunctionData, parseAbi, type Hex } from 'viem';
import type { Config } from '../../config/config.ts';
import { USDC_EVM, type EvmChain } from '../../domain/chains.ts';
import type { Logger } from '../../log/logger.ts';
import { ChainReadError, SIGNING_ERROR_CODES } from '../errors.ts';
import type { ChainReader } from '../types.ts';
import { postJsonRpc } from '../json-rpc.ts';

const USDC_ABI = parseAbi([
  'function nonces(address owner) view returns (uint256)',
  'function balanceOf(address owner) view returns (uint256)',
  'function name() view returns (string)',
  'function version() view returns (string)',
]);

/** The contract's reads, plus the two the EIP-712 domain needs. */
export type EvmChainReader = ChainReader & {
  /** USDC's `name()`; undefined when no RPC is configured for the chain. */
  usdcName(chain: EvmChain): Promise<string | undefined>;
  /** USDC's `version()`; undefined when no RPC is configured for the chain. */
  usdcVersion(chain: EvmChain): Promise<string | undefined>;
  /** Whether `EVM_RPC_URL_<chain>` is configured. */
  hasRpc(chain: EvmChain): boolean;
};

export type ChainReaderDeps = {
  readonly config: Pick<Config, 'evmRpcUrl' | 'network'>;
  readonly fetch?: typeof fetch;
  readonly logger?: Logger;
  /** Per call; a nonce read sits on the path of every permit, so it must fail fast. Default 2 s. */
  readonly timeoutMs?: number;
};

export const DEFAULT_RPC_TIMEOUT_MS = 2_000;

/**
 * A URL fit for an error message or a log line: no `user:pass@`, no query (providers put API keys
 * in either), and no path beyond the first segment (some put the key there: `/v2/<key>`).
 */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    const first = u.pathname.split('/').filter(Boolean)[0];
    const rest = u.pathname.split('/').filter(Boolean).length > 1 ? '/…' : '';
    return `${u.protocol}//${u.host}${first ? `/${first}${rest}` : ''}`;
  } catch {
    return '[unparseable url]';
  }
}

/** eth_call of USDC's views over `EVM_RPC_URL_<CHAIN>` (plain JSON-RPC over fetch, short timeouts). */
export function createChainReader(deps: ChainReaderDeps): EvmChainReader {
  const doFetch = deps.fetch ?? globalThis.fetch;
  const timeoutMs = deps.timeoutMs ?? DEFAULT_RPC_TIMEOUT_MS;
  let id = 0;

  async function ethCall(chain: EvmChain, data: Hex): Promise<Hex | undefined> {
    const url = deps.config.evmRpcUrl[chain];
    if (url === undefined) return undefined;
    const to = USDC_EVM[deps.config.network][chain].usdc;
    const where = { chain, url: redactUrl(url) };
    const fail = (shortMessage: string, cause?: unknown): ChainReadError =>
      new ChainReadError(SIGNING_ERROR_CODES.rpcFailed, `${chain} RPC ${where.url}: ${shortMessage}`, {
        cause,
        meta: where,
      });
    const body = await postJsonRpc(
      url,
      { method: 'eth_call', params: [{ to, data }, 'latest'], id: ++id },
      { fetch: doFetch, timeoutMs, fail: (m) => fail(m) },
    );
    const { result, error } = body;
    if (error !== undefined) {
      const message = typeof error?.message === 'string' ? error.message.slice(0, 200) : 'error';
      throw fail(`eth_call refused: ${message}`);
    }
    if (typeof result !== 'string' || !/^0x([0-9a-fA-F]{2})*$/.test(result) || result === '0x') {
      throw fail('eth_call answered no data (is USDC deployed at the configured address?)');
    }
    return result as Hex;
  }

  async function read<F extends 'nonces' | 'balanceOf' | 'name' | 'version'>(
    chain: EvmChain,
    functionName: F,
    args: readonly unknown[],
  ): Promise<unknown> {
    const data = encodeFunctionData({
      abi: USDC_ABI,
      functionName,
      args,
    } as Parameters<typeof encodeFunctionData>[0]);
    const raw = await ethCall(chain, data);
    if (raw === undefined) return undefined;
    try {
      return decodeFunctionResult({ abi: USDC_ABI, functionName, data: raw } as Parameters<
        typeof decodeFunctionResult
      >[0]);
    } catch (cause) {
      throw new ChainReadError(
        SIGNING_ERROR_CODES.rpcFailed,
        `${chain} RPC: ${functionName}() answer cannot be decoded`,
        {
          cause,
          meta: { chain },
        },
      );
    }
  }

  const bigintRead = async (chain: EvmChain, fn: 'nonces' | 'balanceOf', owner: string) => {
    const v = await read(chain, fn, [owner]);
    if (v === undefined) return undefined;
    if (typeof v !== 'bigint')
      throw new ChainReadError(SIGNING_ERROR_CODES.rpcFailed, `${chain} RPC: ${fn}() is not a number`);
    return v;
  };
  const stringRead = async (chain: EvmChain, fn: 'name' | 'version') => {
    const v = await read(chain, fn, []);
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || v.length === 0 || v.length > 100)
      throw new ChainReadError(SIGNING_ERROR_CODES.rpcFailed, `${chain} RPC: ${fn}() is not a usable string`);
    return v;
  };

  return {
    hasRpc: (chain) => deps.config.evmRpcUrl[chain] !== undefined,
    permitNonce: (chain, owner) => bigintRead(chain, 'nonces', owner),
    usdcBalance: (chain, owner) => bigintRead(chain, 'balanceOf', owner),
    usdcName: (chain) => stringRead(chain, 'name'),
    usdcVersion: (chain) => stringRead(chain, 'version'),
  };
}
