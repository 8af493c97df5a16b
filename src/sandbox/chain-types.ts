import type { EvmChain } from '../domain/chains.ts';
import type { SentMessages } from './evm/anvil-cctp.ts';
import type { ParsedPermit } from './permit-check.ts';

/** Why a chain refused what the service asked of it, as the service's error code and message. */
export type Refusal = { readonly code: string; readonly message: string };

export type EvmTransferOutcome =
  | { readonly ok: true; readonly txHash: string; readonly permitTxHash: string | null }
  | ({ readonly ok: false } & Refusal);

/** What runs one EVM chain for the sandbox's service: anvil (the default) or the in-memory model. */
export type SandboxEvmChain = {
  readonly chain: EvmChain;
  /** The node behind the chain, for `/__admin/info` (a PID to check is gone after stop). */
  readonly node: {
    readonly kind: 'anvil' | 'memory';
    readonly url: string | null;
    readonly pid: number | null;
  };
  /** The relayer executes the permit for `amount`, then moves `amount` from the owner to the deposit address. */
  transferWithPermit(permit: ParsedPermit, amount: bigint): Promise<EvmTransferOutcome>;
  /** Pays `amount` to `recipient` on this chain (the destination end of a transfer); the tx hash. */
  pay(recipient: string, amount: bigint): Promise<string>;
  /** USDC balance now (never funds). */
  balanceOf(address: string): Promise<bigint>;
  /** USDC's total supply now (a CCTP burn lowers it, a mint raises it). */
  totalSupply(): Promise<bigint>;
  /** Native gas (wei) `address` holds now. */
  nativeBalance(address: string): Promise<bigint>;
  /** Sets the native gas of `address` for a drill (an owner that cannot pay); it counts as met. */
  setNativeBalance(address: string, wei: bigint): Promise<void>;
  /** Tops `address` up to the configured native gas if it holds less (no USDC; it is not met by this). */
  giveGas(address: string): Promise<void>;
  blockNumber(): Promise<bigint>;
  /** The CCTP `MessageSent` messages of a transaction; null while the chain has no receipt for it. */
  sentMessages(txHash: string): Promise<SentMessages | null>;
  /** USDC's blacklister puts `address` on (or takes it off) the blacklist: `isBlacklisted` answers it. */
  setBlacklisted(address: string, on: boolean): Promise<void>;
  /** `expected`: the nonce the contract takes next; `visible`: what the (possibly lagging) RPC shows. */
  nonces(owner: string): Promise<{ expected: bigint; visible: bigint }>;
  /** Uses the owner's next `count` nonces as a signer elsewhere would; returns them. */
  useNoncesOutside(owner: string, count: number): Promise<bigint[]>;
  /** Sets a balance for a drill; the address then counts as met (never auto-funded). */
  setBalance(address: string, amount: bigint): Promise<void>;
  /** Funds `address` with the configured amount if the sandbox has not met it yet. */
  meet(address: string): Promise<void>;
  /** One JSON-RPC request body (single or batch) of `/rpc/<CHAIN>`; the answer body. */
  rpc(body: unknown): Promise<unknown>;
  /** Back to the chain as it was right after start-up. */
  reset(): Promise<void>;
  close(): Promise<void>;
};

export type SolanaSubmitOutcome =
  { readonly ok: true; readonly signature: string } | ({ readonly ok: false } & Refusal);

/** What runs Solana for the sandbox's service: LiteSVM (the default) or the in-memory model. */
export type SandboxSolanaChain = {
  readonly kind: 'litesvm' | 'memory';
  /** The service's fee payer (base58). */
  readonly feePayer: string;
  /** The service's USDC account built transactions pay into. */
  readonly depositAccount: string;
  /** The blockhash a transaction built now uses. */
  blockhash(): string;
  /** Signs `messageBytes` as the fee payer. */
  signAsFeePayer(messageBytes: Uint8Array): Promise<Uint8Array>;
  /** Executes a fully signed wire transaction; the runtime's verdict. */
  execute(wire: Uint8Array): Promise<SolanaSubmitOutcome>;
  /** Pays `amount` USDC to the USDC account of `owner` (the destination end of a transfer); the signature. */
  pay(owner: string, amount: bigint): Promise<string>;
  /** USDC in `owner`'s USDC account (0 when it has none); never funds. */
  balanceOf(owner: string): Promise<bigint>;
  /** SOL (lamports) `address` holds. */
  lamports(address: string): Promise<bigint>;
  setBalance(owner: string, amount: bigint): Promise<void>;
  /**
   * Freezes (or thaws) `owner`'s USDC associated token account, creating it empty first if it has
   * none; the owner then counts as met (never auto-funded). Its account address.
   */
  setFrozen(owner: string, on: boolean): Promise<string>;
  /** Funds `owner`'s USDC account with the configured amount if the sandbox has not met it yet. */
  meet(owner: string): Promise<void>;
  /** One Solana JSON-RPC request body of `/rpc/SOLANA` (balances); the answer body. */
  rpc(body: unknown): Promise<unknown>;
  reset(): Promise<void>;
  close(): Promise<void>;
};
