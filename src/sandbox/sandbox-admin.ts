import { checksumEvmAddress } from '../domain/addresses.ts';
import { EVM_CHAINS, type Chain, type EvmChain } from '../domain/chains.ts';
import { formatUsdc } from '../domain/money.ts';
import { seededRandom } from './faults.ts';
import { applyConfigPatch, type SandboxConfig, type SandboxConfigPatch } from './sandbox-config.ts';
import { clearServiceState, type ServiceState } from './service-state.ts';

/** A chain's view of an owner's permit nonces: what the service takes next, and what `/rpc` shows now. */
type NonceView = { readonly expected: bigint; readonly chain: bigint };

/** One on-chain USDC balance (the chain's own, never the sandbox's counters). */
export type BalanceRow = {
  readonly chain: Chain;
  readonly address: string;
  /** Decimal USDC. */
  readonly usdc: string;
  readonly base_units: string;
  /** Solana only: the SOL (lamports) the address holds. */
  readonly lamports?: string;
};

export type SandboxAdmin = {
  config(): SandboxConfig;
  configure(patch: SandboxConfigPatch): SandboxConfig;
  /** Clears ledger, intents, idempotency records and plants, reverts every chain to its start; config back to the options. */
  reset(): Promise<void>;
  /** As if the owner had signed `by` permits elsewhere (the outside signer); the nonces after. */
  bumpNonce(chain: EvmChain, owner: string, by?: number): Promise<NonceView>;
  /** Uses the owner's next `count` nonces as a treasurer signing elsewhere would, now. */
  outsidePermit(chain: EvmChain, owner: string, count?: number): Promise<NonceView & { used: bigint[] }>;
  nonce(chain: EvmChain, owner: string): Promise<NonceView>;
  /** Forces an intent's status (e.g. `failed`); false when the intent is unknown. */
  setIntentStatus(intentId: string, status: string): boolean;
  /** When each transfer-service request arrived (ms) and for which operation, oldest first (the last 100,000). */
  requests(): readonly { readonly op: string; readonly at: number }[];
  /** On-chain USDC of each address: every EVM chain for an EVM address, SOLANA for a Solana wallet. Funds no one. */
  balances(addresses: readonly string[]): Promise<BalanceRow[]>;
  /** Sets an on-chain balance for a drill (an owner that cannot cover a row); the address counts as met. */
  setBalance(chain: Chain, address: string, amount: bigint): Promise<void>;
  /** Native gas (wei) of an EVM address on a chain (never funds). */
  nativeBalance(chain: EvmChain, address: string): Promise<bigint>;
  /** Sets it for a drill (an owner that cannot pay its CCTP transactions); the address counts as met. */
  setNativeBalance(chain: EvmChain, address: string, wei: bigint): Promise<void>;
  /** USDC's own blacklist on an EVM chain (FiatToken's `blacklist` / `unBlacklist`). */
  setBlacklisted(chain: EvmChain, address: string, on: boolean): Promise<void>;
  /** Freezes or thaws a Solana wallet's USDC account; the account's address. */
  setFrozen(owner: string, on: boolean): Promise<string>;
};

export function createSandboxAdmin(s: ServiceState): SandboxAdmin {
  const nonce = async (chain: EvmChain, owner: string): Promise<NonceView> => {
    const n = await s.evm[chain].nonces(owner);
    return { expected: n.expected, chain: n.visible };
  };
  const outsidePermit = async (chain: EvmChain, owner: string, count = 1) => {
    const used = await s.evm[chain].useNoncesOutside(owner, count);
    return { used, ...(await nonce(chain, owner)) };
  };
  return {
    config: () => s.config,
    configure(patch) {
      const seedBefore = s.config.seed;
      s.config = applyConfigPatch(s.config, patch);
      if (patch.seed !== undefined || s.config.seed !== seedBefore) s.random = seededRandom(s.config.seed);
      return s.config;
    },
    async reset() {
      clearServiceState(s);
      await Promise.all([...EVM_CHAINS.map((c) => s.evm[c].reset()), s.solana.reset()]);
    },
    bumpNonce: async (chain, owner, by = 1) => {
      const r = await outsidePermit(chain, owner, by);
      return { expected: r.expected, chain: r.chain };
    },
    outsidePermit,
    nonce,
    setIntentStatus(intentId, st) {
      const intent = s.intents.get(intentId);
      if (!intent) return false;
      intent.forced = st;
      return true;
    },
    requests: () => [...s.requestLog],
    balances: (addresses) => readBalances(s, addresses),
    async setBalance(chain, address, amount) {
      if (chain === 'SOLANA') await s.solana.setBalance(address, amount);
      else await s.evm[chain].setBalance(address, amount);
    },
    nativeBalance: (chain, address) => s.evm[chain].nativeBalance(address),
    setNativeBalance: (chain, address, wei) => s.evm[chain].setNativeBalance(address, wei),
    setBlacklisted: (chain, address, on) => s.evm[chain].setBlacklisted(address, on),
    setFrozen: (owner, on) => s.solana.setFrozen(owner, on),
  };
}

async function readBalances(s: ServiceState, addresses: readonly string[]): Promise<BalanceRow[]> {
  const rows = await Promise.all(
    addresses.map(async (address): Promise<BalanceRow[]> => {
      if (/^0x[0-9a-fA-F]{40}$/.test(address)) {
        const owner = checksumEvmAddress(address);
        return await Promise.all(
          EVM_CHAINS.map(async (chain) => row(chain, owner, await s.evm[chain].balanceOf(owner))),
        );
      }
      const [usdc, lamports] = await Promise.all([s.solana.balanceOf(address), s.solana.lamports(address)]);
      return [{ ...row('SOLANA', address, usdc), lamports: lamports.toString() }];
    }),
  );
  return rows.flat();
}

const row = (chain: Chain, address: string, amount: bigint): BalanceRow => ({
  chain,
  address,
  usdc: formatUsdc(amount),
  base_units: amount.toString(),
});
