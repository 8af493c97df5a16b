import type { EvmChain } from '../domain/chains.ts';
import type { PermitPayload } from '../domain/permit.ts';
import type { NonceDoubt } from '../store/nonce-pool.ts';

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

/** A block as an RPC node reported it: what a conclusion drawn from a read at it rests on. */
export type BlockRef = {
  readonly number: bigint;
  /** The block's timestamp, unix seconds (what a permit's deadline is compared with on chain). */
  readonly timestamp: bigint;
  readonly hash: string;
};

/** Which block a chain read is made at. */
export type BlockTag = 'latest' | 'finalized';

/** `nonces(owner)` as of a known block. */
export type NonceReading = { readonly nonce: bigint; readonly block: BlockRef };

/** Reads of the chain over `EVM_RPC_URL_<CHAIN>`; undefined when no RPC is configured for the chain. */
export type ChainReader = {
  /** `nonces(owner)` at `latest`: a lower bound of the owner's next nonce, nothing more. */
  permitNonce(chain: EvmChain, owner: string): Promise<bigint | undefined>;
  /**
   * The header of the node's `latest` (default) or `finalized` block, then `nonces(owner)` at that
   * very block (by its hash): what every conclusion "never executed", "can never execute" or "the
   * chain moved" must rest on. "Never executed" reads `finalized`: a block that a reorganisation can
   * still replace might lack a permit the canonical chain executed. Throws a ChainReadError
   * (`USDC_RPC_BLOCK_UNKNOWN`) when the node cannot say which block it answered from.
   */
  permitNonceAtHead(chain: EvmChain, owner: string, tag?: BlockTag): Promise<NonceReading | undefined>;
  usdcBalance(chain: EvmChain, owner: string): Promise<bigint | undefined>;
  /** `balanceOf(owner)` at the node's `latest` block, read by that block's hash. */
  usdcBalanceAtHead(chain: EvmChain, owner: string): Promise<BalanceReadingAt | undefined>;
  /** The block `txHash` was mined in; null while the node has no receipt for it. */
  txBlock(chain: EvmChain, txHash: string): Promise<bigint | null | undefined>;
};

/** `balanceOf(owner)` as of a known block. */
export type BalanceReadingAt = { readonly balance: bigint; readonly block: BlockRef };

/**
 * Exclusive, ordered use of one (chain, owner)'s permit nonces across every worker process.
 * `holder` is a stable id of the transfer (not of the process), so a transfer re-run after a crash
 * re-enters its own lease at once while every other transfer waits.
 */
export type NonceManager = {
  /**
   * The lease of (chain, owner) for `holder`, once free. Rejects with NoncePoolHeldError while the
   * pool is held (no permit of this owner can go through for now: the error says why and how long),
   * and with a SigningError `USDC_NONCE_WAIT_ABORTED` when `signal` aborts or `giveUpAfterMs` passed.
   */
  acquire(chain: EvmChain, owner: string, holder: string, options?: AcquireOptions): Promise<NonceLease>;
  /**
   * Records a permit presumed used (its answer was lost) that may still execute until its
   * deadline: its nonce counts as used, and no permit is signed at or below it until it is settled.
   * Frees `doubt.holder`'s lease if it holds it.
   */
  presumeUsed(chain: EvmChain, owner: string, doubt: NonceDoubt): Promise<void>;
  /** Presumed-used permits of (chain, owner) at nonce `from` or above, lowest first. */
  doubts(chain: EvmChain, owner: string, from: bigint): Promise<NonceDoubt[]>;
  /**
   * A presumed-used permit is settled from the chain: `used` (the chain's nonce passed it), or
   * unused (at a block past its deadline the chain was still at `chainNonce` ≤ its nonce). Once no
   * presumed-used permit at or above `chainNonce` is left, the pool moves back down to it, so
   * later permits do not skip nonces that will never be used. Returns whether it moved back.
   */
  settleDoubt(chain: EvmChain, owner: string, doubt: NonceDoubt, verdict: DoubtVerdict): Promise<boolean>;
  /**
   * The transfer whose permit with `nonce` the service accepted (committed through the pool), of
   * the last few hundred; undefined when none is remembered (never committed, used by an outside
   * signer, or too long ago).
   */
  usedBy(chain: EvmChain, owner: string, nonce: bigint): Promise<string | undefined>;
  /**
   * How many of this process's transfers wait for the lease of (chain, owner) now (its preparer
   * included): a transfer that finds every owner busy waits for the least awaited one.
   */
  waiting?(chain: EvmChain, owner: string): number;
};

export type AcquireOptions = {
  /** Stops the wait at once (shutdown), preparer or not. */
  readonly signal?: AbortSignal;
  /**
   * A waiter that is not preparing gives up after this long (its worker slot goes back to the
   * queue). A preparer waits on: it is next, and its permit is ready.
   */
  readonly giveUpAfterMs?: number;
  /**
   * Offered while another holder's permit with nonce n is in flight: sign the permit with `nonce`
   * (n + 1) and save it as prepared and unsent, then resolve true; false when this transfer may not
   * make a new permit now (its saved payload may have been processed). The permit may be sent only
   * once `acquire` has returned a lease whose `nonce` is its nonce and `confirm()` said true: that
   * is the hand-off, "n accepted → n + 1 sent". Called at most once per nonce offered; it may be
   * offered again later.
   */
  readonly prepare?: (nonce: bigint) => Promise<boolean>;
  /** One try only: a lease another holder has rejects with NonceLeaseBusyError (no wait, no prepare). */
  readonly once?: boolean;
};

/** A permit presumed used: its nonce, its deadline (unix seconds) and its transfer. */
/** A permit presumed used, as the pool's review set keeps it (src/store/nonce-pool.ts). */
export type { NonceDoubt };

export type DoubtVerdict = { readonly used: true } | { readonly used: false; readonly chainNonce: bigint };

export type NonceLease = {
  /** The nonce this holder must sign with: its in-flight nonce if it had one, else the next free one. */
  readonly nonce: bigint;
  /**
   * Whether this holder holds the lease at `nonce` now; to be awaited before a permit is sent under
   * it. Free (no round trip) for a lease acquire looked at; a lease handed to a preparer that was
   * woken by name is renewed here — start it together with the write that precedes the send, so the
   * two share one round trip, and send only on true.
   */
  confirm(): Promise<boolean>;
  /** The permit with `nonce` was accepted by the service: the next holder gets nonce + 1. */
  commit(): Promise<void>;
  /** The permit with `nonce` may have executed (its answer was lost): committed and recorded as presumed used. */
  presumeUsed(deadline: bigint): Promise<void>;
  /** The permit with `nonce` can never execute (never sent, or first send refused): the nonce goes back to the pool. */
  release(): Promise<void>;
  /** The chain shows the owner's nonce at `chainNonce`, past ours (signed elsewhere): the lease, and the pool, move to it. */
  moveTo(chainNonce: bigint): Promise<void>;
  /** Keeps the lease alive; `settling` marks it as waiting for the chain after a refusal (shown in the pool). */
  extend(settling?: { readonly refusedAt: number }): Promise<void>;
  /**
   * No permit of this owner can go through for now: frees the lease and holds the pool for `ms`
   * (or until a chain reading shows a nonce above `chainNonce`), so that other transfers wait
   * with `reason` rather than being refused one after another.
   */
  holdPool(hold: {
    readonly ms: number;
    readonly chainNonce: bigint;
    readonly reason: string;
  }): Promise<void>;
};

export type SolanaExpectation = {
  readonly amount: bigint;
  /** The row's EVM recipient (CCTP `mint_recipient`, left-padded to 32 bytes). */
  readonly recipient: string;
  readonly to: EvmChain;
};

/** Which transfer a check is for, for the log. */
export type TransferRef = { readonly batchId: string; readonly transferId: string };

export type PolicyVerdict =
  | { readonly ok: true }
  | { readonly ok: false; readonly instruction: number | null; readonly reason: string };

export type SolanaSigner = {
  /** Our public key (base58). */
  readonly address: string;
  /**
   * Decodes and checks a built transaction against the policy of docs/promises.md, promise 3. A
   * refusal is logged at warn with `about` (the batch and transfer it was built for).
   */
  check(transactionBase64: string, expected: SolanaExpectation, about?: TransferRef): PolicyVerdict;
  /** Partially signs as our key only (keeps every existing signature); returns base64 wire bytes. */
  sign(transactionBase64: string): Promise<string>;
};
