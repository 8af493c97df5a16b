import { createPublicClient, http, parseAbi, type Hex, type PublicClient } from 'viem';
import { cctpAddressesOf } from '../../config/cctp-settings.ts';
import type { Config } from '../../config/config.ts';
import type { EvmChain } from '../../domain/chains.ts';
import { displayUrl } from '../../domain/url-display.ts';
import { ChainReadError, SIGNING_ERROR_CODES } from '../errors.ts';
import { MESSAGE_TRANSMITTER_V2_ABI, NONCE_USED } from './cctp-abi.ts';

/*
 * What the CCTP road reads from the chains (docs/cctp.md "The flow"): the owner's USDC allowance to
 * TokenMessengerV2, whether a message's nonce was received on its destination (`usedNonces`), and
 * the head (an attestation's `expirationBlock` is a destination block). Every failure to read is a
 * ChainReadError: the step is tried again.
 */

const ALLOWANCE_ABI = parseAbi([
  'function allowance(address owner, address spender) view returns (uint256)',
  'function balanceOf(address owner) view returns (uint256)',
]);

export type CctpReads = {
  allowance(chain: EvmChain, owner: string): Promise<bigint>;
  /** The owner's USDC on the chain (what bounds an approval that covers its queued transfers). */
  usdcBalance(chain: EvmChain, owner: string): Promise<bigint>;
  nonceUsed(chain: EvmChain, nonce: string): Promise<boolean>;
  head(chain: EvmChain): Promise<bigint>;
};

type Reads = {
  readonly config: Pick<
    Config,
    'evmRpcUrl' | 'network' | 'cctpTokenMessenger' | 'cctpMessageTransmitter' | 'usdcAddress'
  >;
  readonly clients: Map<EvmChain, PublicClient>;
};

function clientOf(r: Reads, chain: EvmChain): PublicClient {
  const known = r.clients.get(chain);
  if (known) return known;
  const url = r.config.evmRpcUrl[chain];
  if (!url) throw new ChainReadError(SIGNING_ERROR_CODES.rpcFailed, `EVM_RPC_URL_${chain} is not set`);
  const client = createPublicClient({ transport: http(url, { timeout: 10_000, retryCount: 0 }) });
  r.clients.set(chain, client);
  return client;
}

async function read<T>(
  r: Reads,
  chain: EvmChain,
  what: string,
  f: (c: PublicClient) => Promise<T>,
): Promise<T> {
  const c = clientOf(r, chain);
  try {
    return await f(c);
  } catch (err) {
    const url = r.config.evmRpcUrl[chain] ?? '';
    const message = (err as { shortMessage?: string }).shortMessage ?? (err as Error).message;
    throw new ChainReadError(
      SIGNING_ERROR_CODES.rpcFailed,
      `${chain} RPC ${displayUrl(url)}: ${what} failed: ${String(message).slice(0, 200)}`,
      { cause: err, meta: { chain } },
    );
  }
}

export function createCctpReads(deps: { readonly config: Reads['config'] }): CctpReads {
  const r: Reads = { config: deps.config, clients: new Map() };
  return {
    allowance: (chain, owner) => {
      const a = cctpAddressesOf(r.config, chain);
      return read(r, chain, 'allowance', (c) =>
        c.readContract({
          address: a.usdc as Hex,
          abi: ALLOWANCE_ABI,
          functionName: 'allowance',
          args: [owner as Hex, a.tokenMessenger as Hex],
        }),
      );
    },
    usdcBalance: (chain, owner) => {
      const a = cctpAddressesOf(r.config, chain);
      return read(r, chain, 'balanceOf', (c) =>
        c.readContract({
          address: a.usdc as Hex,
          abi: ALLOWANCE_ABI,
          functionName: 'balanceOf',
          args: [owner as Hex],
        }),
      );
    },
    nonceUsed: async (chain, nonce) => {
      const a = cctpAddressesOf(r.config, chain);
      const used = await read(r, chain, 'usedNonces', (c) =>
        c.readContract({
          address: a.messageTransmitter as Hex,
          abi: MESSAGE_TRANSMITTER_V2_ABI,
          functionName: 'usedNonces',
          args: [nonce as Hex],
        }),
      );
      return used === NONCE_USED;
    },
    head: (chain) => read(r, chain, 'eth_blockNumber', (c) => c.getBlockNumber()),
  };
}
