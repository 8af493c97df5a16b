import type { EvmChain } from '../domain/chains.ts';
import type { PermitPayload } from '../service/types.ts';

/** The signing layer's public contract (implemented under ./evm and ./solana). */

export type EvmSigner = {
  /** The treasury (permit owner) address, checksummed. */
  readonly address: string;
  /**
   * Signs an ERC-2612 permit for USDC on `chain`: `value` exactly `amount`, the configured spender,
   * the given nonce and deadline (unix seconds). The EIP-712 domain comes from `name()`/`version()`
   * over RPC (cached), or the built-in table when no RPC is configured.
   */
  signPermit(req: {
    chain: EvmChain;
    amount: bigint;
    nonce: bigint;
    deadline: bigint;
  }): Promise<PermitPayload>;
};

/** Reads of the chain over `EVM_RPC_URL_<CHAIN>`; undefined when no RPC is configured for the chain. */
export type ChainReader = {
  permitNonce(chain: EvmChain, owner: string): Promise<bigint | undefined>;
  usdcBalance(chain: EvmChain, owner: string): Promise<bigint | undefined>;
};

/**
 * Exclusive, ordered use of one (chain, owner)'s permit nonces across every worker process.
 * `holder` is a stable id of the transfer (not of the process), so a transfer re-run after a crash
 * re-enters its own lease at once while every other transfer waits.
 */
export type NonceManager = {
  acquire(
    chain: EvmChain,
    owner: string,
    holder: string,
    options?: { signal?: AbortSignal },
  ): Promise<NonceLease>;
  /**
   * A permit presumed used (its answer was lost) is proven dead: past its deadline, the chain's
   * `nonces(owner)` is still `chainNonce`. The pool moves back down to it, so later permits do not
   * skip a nonce that will never be used.
   */
  rewind?(chain: EvmChain, owner: string, chainNonce: bigint): Promise<void>;
};

export type NonceLease = {
  /** The nonce this holder must sign with: its in-flight nonce if it had one, else the next free one. */
  readonly nonce: bigint;
  /** The permit with `nonce` was accepted by the service (or may have executed): the next holder gets nonce + 1. */
  commit(): Promise<void>;
  /** The permit with `nonce` can never execute (never sent, or first send refused): the nonce goes back to the pool. */
  release(): Promise<void>;
  /**
   * After a first send was refused: re-reads `nonces(owner)` from the chain; when it has moved past
   * `nonce` (the owner signed elsewhere), the lease moves to that value and returns it; else undefined.
   */
  refreshFromChain(): Promise<bigint | undefined>;
  /** Keeps the lease alive during a slow call. */
  extend(): Promise<void>;
};

export type SolanaExpectation = {
  readonly amount: bigint;
  /** The row's EVM recipient (CCTP `mint_recipient`, left-padded to 32 bytes). */
  readonly recipient: string;
  readonly to: EvmChain;
};

export type PolicyVerdict =
  | { readonly ok: true }
  | { readonly ok: false; readonly instruction: number | null; readonly reason: string };

export type SolanaSigner = {
  /** Our public key (base58). */
  readonly address: string;
  /** Decodes and checks a built transaction against the policy of PRODUCT.md §5 promise 3. */
  check(transactionBase64: string, expected: SolanaExpectation): PolicyVerdict;
  /** Partially signs as our key only (keeps every existing signature); returns base64 wire bytes. */
  sign(transactionBase64: string): Promise<string>;
};
