import { isEvmChain, type Chain, type EvmChain } from '../domain/chains.ts';
import { errorMessage, UsdcBatchError } from '../domain/errors.ts';
import {
  DEFAULT_WALLET_RPC_TIMEOUT_MS,
  readSolanaTokenBalance,
  type WalletReadConfig,
} from '../ops/wallets.ts';
import { NO_ADDRESS_HINT, type TreasuryAddresses } from '../ops/public-addresses.ts';
import { createChainReader, type EvmChainReader } from '../signing/evm/chain-reader.ts';

/**
 * The treasury's USDC on each chain (docs/rebalancing.md): every EVM owner's `balanceOf`
 * over `EVM_RPC_URL_<CHAIN>` and the Solana wallet's USDC account over `SOLANA_RPC_URL`, all read
 * in parallel, the same reads `wallets` makes, at the treasury's public addresses
 * (src/ops/public-addresses.ts: no key is read). A chain whose balance cannot be read is an error
 * naming it: nothing is planned on a guess.
 */

export { treasuryAddresses, type TreasuryAddresses } from '../ops/public-addresses.ts';

/** The configuration the treasury's reads take: the same as `wallets` (ops/wallets.ts). */
export type TreasuryConfig = WalletReadConfig;

export type OwnerBalance = { readonly address: string; readonly balance: bigint };

export type ChainBalance = {
  readonly chain: Chain;
  /** micro-USDC, every owner's (Solana: the keypair's USDC account). */
  readonly balance: bigint;
  /** Per owner, in configured order (Solana: the keypair's address). */
  readonly owners: readonly OwnerBalance[];
};

export class BalanceReadError extends UsdcBatchError {
  override name = 'BalanceReadError';
  readonly failures: readonly { readonly chain: Chain; readonly message: string }[];
  constructor(failures: readonly { chain: Chain; message: string }[]) {
    super(
      'USDC_TREASURY_BALANCE_UNREADABLE',
      `cannot read the treasury's balance on ${failures.map((f) => `${f.chain} (${f.message})`).join('; ')}`,
    );
    this.failures = failures;
  }
}

async function readEvmChain(
  reader: EvmChainReader,
  chain: EvmChain,
  owners: readonly string[],
): Promise<ChainBalance> {
  if (owners.length === 0) throw new Error(`no EVM owner address is known: ${NO_ADDRESS_HINT}`);
  if (!reader.hasRpc(chain)) throw new Error(`EVM_RPC_URL_${chain} is not set`);
  const balances = await Promise.all(
    owners.map(async (address) => {
      const balance = await reader.usdcBalance(chain, address);
      if (balance === undefined) throw new Error(`EVM_RPC_URL_${chain} is not set`);
      return { address, balance };
    }),
  );
  return { chain, balance: balances.reduce((s, o) => s + o.balance, 0n), owners: balances };
}

async function readSolana(
  addresses: TreasuryAddresses,
  config: TreasuryConfig,
  options: BalanceOptions,
): Promise<ChainBalance> {
  if (!addresses.solana) throw new Error(`no Solana address is known: ${NO_ADDRESS_HINT}`);
  if (!config.solanaRpcUrl) throw new Error('SOLANA_RPC_URL is not set');
  const balance = await readSolanaTokenBalance(config.solanaRpcUrl, addresses.solana.usdcAccount, {
    timeoutMs: options.timeoutMs ?? DEFAULT_WALLET_RPC_TIMEOUT_MS,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  return { chain: 'SOLANA', balance, owners: [{ address: addresses.solana.address, balance }] };
}

export type BalanceOptions = { readonly fetch?: typeof fetch; readonly timeoutMs?: number };

/**
 * Reads every chain of `chains` at once. Throws BalanceReadError naming every chain that could not
 * be read (no key, no RPC, an RPC error or timeout).
 */
export async function readTreasuryBalances(
  config: TreasuryConfig,
  addresses: TreasuryAddresses,
  chains: readonly Chain[],
  options: BalanceOptions = {},
): Promise<ChainBalance[]> {
  const reader = createChainReader({
    config,
    timeoutMs: options.timeoutMs ?? DEFAULT_WALLET_RPC_TIMEOUT_MS,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  const results = await Promise.allSettled(
    chains.map((chain) =>
      isEvmChain(chain)
        ? readEvmChain(reader, chain, addresses.evmOwners)
        : readSolana(addresses, config, options),
    ),
  );
  const failures = results.flatMap((r, i) =>
    r.status === 'rejected' ? [{ chain: chains[i] as Chain, message: errorMessage(r.reason) }] : [],
  );
  if (failures.length > 0) throw new BalanceReadError(failures);
  return results.map((r) => (r as PromiseFulfilledResult<ChainBalance>).value);
}
