import { createHash } from 'node:crypto';
import { keccak256, toHex } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { checksumEvmAddress } from '../domain/addresses.ts';
import { EVM_CHAINS, type EvmChain, type Network } from '../domain/chains.ts';
import type { AdminContext } from './admin-routes.ts';
import { attestedMessage, signAttestation } from './cctp-attester.ts';
import { createCctpState } from './cctp-state.ts';
import { sandboxCctpAddresses } from './evm/anvil-cctp.ts';
import type { SandboxEvmChain, SandboxSolanaChain } from './chain-types.ts';
import { startAnvilChain } from './evm/anvil-chain.ts';
import { startSandboxHttp } from './http-service.ts';
import { createSandboxAdmin, type SandboxAdmin } from './sandbox-admin.ts';
import { applyConfigPatch, DEFAULT_SANDBOX_CONFIG, type SandboxConfig } from './sandbox-config.ts';
import { createServiceState, type LedgerEntry, type ServiceState } from './service-state.ts';
import { startLiteSvmChain } from './solana/litesvm-chain.ts';

export type { LedgerEntry } from './service-state.ts';
export type { SandboxAdmin } from './sandbox-admin.ts';

const SANDBOX_DEFAULT_API_KEY = 'sk_sandbox_local';
const DEFAULT_FEE_PAYER_SEED = 'usdc-batch sandbox: solana fee payer';
/** Where transferFrom moves an owner's USDC: an address derived from a label, whose key nobody has. */
const SANDBOX_DEPOSIT_ADDRESS = checksumEvmAddress(
  `0x${keccak256(toHex('usdc-batch sandbox: deposit')).slice(-40)}`,
) as `0x${string}`;

/** Where the sandbox's TokenMessengerV2 mints the fee of a CCTP mint: an address derived from a label, whose key nobody has. */
const SANDBOX_CCTP_FEE_RECIPIENT = checksumEvmAddress(
  `0x${keccak256(toHex('usdc-batch sandbox: cctp fee recipient')).slice(-40)}`,
) as `0x${string}`;

/** The sandbox's CCTP v2 (docs/sandbox.md "CCTP v2"): its attestation API, contracts and attester. */
export type SandboxCctp = {
  /** `CCTP_API_URL` for a worker: `<sandbox>/cctp`. */
  readonly apiUrl: string;
  /** The attester's address (its key stays in this process). */
  readonly attester: string;
  readonly feeRecipient: string;
  /** Circle's testnet TokenMessengerV2 and MessageTransmitterV2 addresses, where the sandbox's contracts are. */
  contracts(chain: EvmChain): { tokenMessenger: string; messageTransmitter: string };
  /** Drills only (in-process): the attester's signature over any message, to test what the contracts refuse. */
  attest(message: `0x${string}`): Promise<`0x${string}`>;
  /** Drills only: an emitted message with the attester's fill-ins, unsigned. */
  fill: typeof attestedMessage;
};

export type SandboxOptions = Partial<SandboxConfig> & {
  /** Default 0 (a free port). */
  readonly port?: number;
  /** Default 127.0.0.1. */
  readonly host?: string;
  readonly apiKey?: string;
  /** Only `testnet`: the sandbox's chains run testnet chain ids, so nothing it signs is valid on mainnet. */
  readonly network?: Network;
  /** Bearer token of `POST /plants`; default the API key. */
  readonly plantsToken?: string;
  /** Seed of the sandbox's Solana fee-payer key (a fixed default, so its address is stable). */
  readonly solanaFeePayerSeed?: string;
};

/** The processes and in-process runtimes behind the sandbox (for `/__admin/info` and docs/sandbox.md's costs). */
type SandboxNodes = {
  readonly evm: Readonly<
    Record<EvmChain, { readonly kind: string; readonly url: string | null; readonly pid: number | null }>
  >;
  readonly solana: { readonly kind: string };
};

export type Sandbox = {
  readonly url: string;
  readonly port: number;
  readonly host: string;
  readonly apiKey: string;
  /** The relayer's address: the spender every permit must name (a random key per run). */
  readonly spender: string;
  readonly network: Network;
  /** The sandbox's Solana fee payer (base58). */
  readonly solanaFeePayer: string;
  /** The USDC token account built transactions pay into. */
  readonly solanaDepositAccount: string;
  readonly depositAddress: string;
  readonly nodes: SandboxNodes;
  rpcUrl(chain: EvmChain | 'SOLANA'): string;
  ledger(): readonly LedgerEntry[];
  readonly admin: SandboxAdmin;
  readonly cctp: SandboxCctp;
  close(): Promise<void>;
};

/** Every chain at once (anvils start in parallel, ~0.1 s each); whatever started is stopped if one fails. */
async function startChains(p: {
  network: Network;
  relayer: ReturnType<typeof privateKeyToAccount>;
  attester: PrivateKeyAccount;
  feePayerSeed: Uint8Array;
  config: () => SandboxConfig;
}): Promise<{ evm: Record<EvmChain, SandboxEvmChain>; solana: SandboxSolanaChain }> {
  const evm: Partial<Record<EvmChain, SandboxEvmChain>> = {};
  const starts = EVM_CHAINS.map(async (chain) => {
    evm[chain] = await startAnvilChain({
      chain,
      network: p.network,
      relayer: p.relayer,
      deposit: SANDBOX_DEPOSIT_ADDRESS,
      attester: p.attester.address,
      cctpFeeRecipient: SANDBOX_CCTP_FEE_RECIPIENT,
      config: p.config,
      // Met on one chain, given gas on every other: its CCTP mint is sent on the destination.
      onMet: async (address) => {
        await Promise.all(EVM_CHAINS.filter((c) => c !== chain).map((c) => evm[c]?.giveGas(address)));
      },
    });
  });
  const solana = startLiteSvmChain({ network: p.network, feePayerSeed: p.feePayerSeed, config: p.config });
  const settled = await Promise.allSettled([...starts, solana]);
  const failed = settled.find((r) => r.status === 'rejected');
  if (failed) {
    await Promise.all(Object.values(evm).map((c) => c.close()));
    throw (failed as PromiseRejectedResult).reason;
  }
  return { evm: evm as Record<EvmChain, SandboxEvmChain>, solana: await solana };
}

/** What the sandbox's info (`/__admin/info`, `--write-env`) is made of, beside its URL. */
type InfoParts = {
  readonly apiKey: string;
  readonly spender: string;
  readonly network: Network;
  readonly solana: { readonly feePayer: string; readonly depositAccount: string };
  readonly attester: string;
  readonly nodes: SandboxNodes;
};

/** The sandbox's info once it listens at `url`: the API, its keys and addresses, the CCTP API, the RPCs. */
function sandboxInfo(url: string, p: InfoParts) {
  return {
    url,
    api_key: p.apiKey,
    spender: p.spender,
    network: p.network,
    solana_fee_payer: p.solana.feePayer,
    solana_deposit_account: p.solana.depositAccount,
    deposit_address: SANDBOX_DEPOSIT_ADDRESS,
    cctp: {
      api_url: `${url}/cctp`,
      attester: p.attester,
      fee_recipient: SANDBOX_CCTP_FEE_RECIPIENT,
      contracts: sandboxCctpAddresses(p.network, 'ETH'),
    },
    rpc: Object.fromEntries([...EVM_CHAINS, 'SOLANA'].map((c) => [c, `${url}/rpc/${c}`])),
    nodes: p.nodes,
  };
}

/** The host in the sandbox's URL: loopback for a wildcard listen, an IPv6 address in brackets. */
function urlHostOf(host: string): string {
  return host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
}

export class SandboxNetworkError extends Error {
  override name = 'SandboxNetworkError';
}

/**
 * A strict HTTP implementation of the transfer service (docs/transfer-service.md §4, docs/promises.md) on real local
 * chains: an anvil per EVM chain (its testnet chain id, the USDC token at USDC's address) and
 * LiteSVM for Solana, with a lagging JSON-RPC per chain, fault injection and a ledger. Started at
 * once; `close()` stops every anvil it started. Admin routes (`/__admin/*`) answer loopback only.
 */
export async function createSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const network: Network = options.network ?? 'testnet';
  if (network !== 'testnet')
    throw new SandboxNetworkError(
      'the sandbox runs testnet chain ids only: a permit signed against it must never be valid on mainnet',
    );
  const {
    port,
    host: _h,
    apiKey: _a,
    network: _n,
    plantsToken: _t,
    solanaFeePayerSeed,
    ...configOptions
  } = options;
  const config = applyConfigPatch(DEFAULT_SANDBOX_CONFIG, configOptions);
  // The chains read the service's config as it is now (funding amount, RPC lag); the service's
  // state exists only once the chains have started.
  const live: { state?: ServiceState } = {};
  const getConfig = () => live.state?.config ?? config;
  // The relayer's key is made here, per run, and never leaves this process's memory.
  const relayer = privateKeyToAccount(generatePrivateKey());
  // So is the CCTP attester's, which every chain's MessageTransmitterV2 trusts.
  const attester = privateKeyToAccount(generatePrivateKey());
  const feePayerSeed = createHash('sha256')
    .update(solanaFeePayerSeed ?? DEFAULT_FEE_PAYER_SEED)
    .digest();
  const { evm, solana } = await startChains({
    network,
    relayer,
    attester,
    feePayerSeed,
    config: getConfig,
  });
  const apiKey = options.apiKey ?? SANDBOX_DEFAULT_API_KEY;
  const state = createServiceState({
    network,
    apiKey,
    plantsToken: options.plantsToken ?? apiKey,
    evm,
    solana,
    spender: relayer.address,
    config,
    cctp: createCctpState(attester, SANDBOX_CCTP_FEE_RECIPIENT),
  });
  live.state = state;
  const admin = createSandboxAdmin(state);
  const host = options.host ?? '127.0.0.1';
  const nodes: SandboxNodes = {
    evm: Object.fromEntries(EVM_CHAINS.map((c) => [c, evm[c].node])) as SandboxNodes['evm'],
    solana: { kind: solana.kind },
  };
  let url = '';
  const parts: InfoParts = {
    apiKey,
    spender: relayer.address,
    network,
    solana,
    attester: attester.address,
    nodes,
  };
  const info = () => sandboxInfo(url, parts);
  const adminContext: AdminContext = { state, admin, info };
  let http: Awaited<ReturnType<typeof startSandboxHttp>>;
  try {
    http = await startSandboxHttp(state, adminContext, { port: port ?? 0, host });
  } catch (e) {
    await Promise.all([...EVM_CHAINS.map((c) => evm[c].close()), solana.close()]);
    throw e;
  }
  url = `http://${urlHostOf(host)}:${http.port}`;
  return {
    url,
    port: http.port,
    host,
    apiKey,
    spender: relayer.address,
    network,
    solanaFeePayer: solana.feePayer,
    solanaDepositAccount: solana.depositAccount,
    depositAddress: SANDBOX_DEPOSIT_ADDRESS,
    nodes,
    rpcUrl: (chain) => `${url}/rpc/${chain}`,
    ledger: () => state.ledger.map((e) => ({ ...e })),
    admin,
    cctp: {
      apiUrl: `${url}/cctp`,
      attester: attester.address,
      feeRecipient: SANDBOX_CCTP_FEE_RECIPIENT,
      contracts: (chain) => sandboxCctpAddresses(network, chain),
      attest: (message) => signAttestation(attester, message),
      fill: attestedMessage,
    },
    async close() {
      for (const t of state.timers) clearTimeout(t);
      await http.close();
      await Promise.all([...EVM_CHAINS.map((c) => evm[c].close()), state.solana.close()]);
    },
  };
}
