import { createPublicClient, http, parseAbi, type Hex } from 'viem';
import { USDC_EVM, type EvmChain } from '../../src/domain/chains.ts';

/*
 * The sandbox's USDC read straight from its anvils: what tests of the CCTP road are judged by
 * (balances, supplies, allowances), never the product's own account of itself.
 */

export const ERC20 = parseAbi([
  'function balanceOf(address) view returns (uint256)',
  'function allowance(address, address) view returns (uint256)',
  'function totalSupply() view returns (uint256)',
  'function approve(address, uint256) returns (bool)',
]);

export const SANDBOX_EVM: readonly EvmChain[] = ['ETH', 'BASE', 'ARB', 'POLYGON'];

/** The sandbox's anvils, as a sandbox process or an in-process sandbox names them. */
type AnvilNodes = { readonly evm: Readonly<Record<EvmChain, { readonly url?: string | null | undefined }>> };

/**
 * Reads of USDC on the sandbox's chains, straight from its anvils (a read over the sandbox's /rpc
 * would meet, and fund, the address); `nodes` is asked each time (a suite sets it in beforeAll).
 */
export function sandboxUsdc(nodes: () => AnvilNodes) {
  const anvil = (chain: EvmChain) =>
    createPublicClient({ transport: http(nodes().evm[chain].url as string) });
  const usdc = (chain: EvmChain) => USDC_EVM.testnet[chain].usdc as Hex;
  const balanceOf = (chain: EvmChain, who: string) =>
    anvil(chain).readContract({
      address: usdc(chain),
      abi: ERC20,
      functionName: 'balanceOf',
      args: [who as Hex],
    });
  const supplyOf = (chain: EvmChain) =>
    anvil(chain).readContract({ address: usdc(chain), abi: ERC20, functionName: 'totalSupply' });
  /** Every sandbox chain's USDC supply: a burn lowers its source's, a mint raises its destination's. */
  async function supplies(): Promise<Record<EvmChain, bigint>> {
    const out = {} as Record<EvmChain, bigint>;
    for (const c of SANDBOX_EVM) out[c] = await supplyOf(c);
    return out;
  }
  return { anvil, usdc, balanceOf, supplyOf, supplies };
}
