import { UsdcBatchError } from '../domain/errors.ts';

/**
 * Errors of the signing layer. Messages carry only public facts (chain, address, a URL's scheme,
 * host and port): never a key, a signature or a signed payload.
 */
export class SigningError extends UsdcBatchError {
  override name = 'SigningError';
}

/** An `EVM_RPC_URL_<CHAIN>` call failed or answered something unusable (transient: retry later). */
export class ChainReadError extends UsdcBatchError {
  override name = 'ChainReadError';
}

/**
 * The nonce lease of this holder is gone (it expired and another transfer took it): the caller must
 * not send a permit signed under it and should start over with `acquire`.
 */
export class NonceLeaseLostError extends UsdcBatchError {
  override name = 'NonceLeaseLostError';
}

/**
 * The (chain, owner)'s nonce pool is held: no permit of this owner can go through for now (a
 * presumed-used permit below blocks it). The transfer waits, with `reason`, for `retryAfterMs`.
 */
export class NoncePoolHeldError extends UsdcBatchError {
  override name = 'NoncePoolHeldError';
  readonly retryAfterMs: number;
  readonly reason: string;
  constructor(retryAfterMs: number, reason: string) {
    super(SIGNING_ERROR_CODES.noncePoolHeld, reason);
    this.retryAfterMs = retryAfterMs;
    this.reason = reason;
  }
}

/** Another transfer holds the (chain, owner)'s nonce lease (a one-try acquire); it may be free in `retryAfterMs`. */
export class NonceLeaseBusyError extends UsdcBatchError {
  override name = 'NonceLeaseBusyError';
  readonly retryAfterMs: number;
  constructor(chain: string, owner: string, retryAfterMs: number) {
    super(
      SIGNING_ERROR_CODES.nonceLeaseBusy,
      `the ${chain} nonce lease of ${owner} is held by another transfer`,
    );
    this.retryAfterMs = retryAfterMs;
  }
}

export const SIGNING_ERROR_CODES = {
  evmKeyMissing: 'USDC_EVM_KEY_MISSING',
  solanaKeyMissing: 'USDC_SOLANA_KEY_MISSING',
  solanaKeyInvalid: 'USDC_SOLANA_KEY_INVALID',
  spenderMissing: 'USDC_PERMIT_SPENDER_MISSING',
  permitInvalid: 'USDC_PERMIT_INVALID',
  rpcFailed: 'USDC_RPC_FAILED',
  /** An owner's call is signed: it is only ever sent (identically, or re-priced), never given up. */
  ownerTxSigned: 'USDC_OWNER_TX_SIGNED',
  /** An owner's transaction is not in Redis as the step expects (missing, or saved as another call). */
  ownerTxMissing: 'USDC_OWNER_TX_RECORD',
  /** An owner's nonce stayed used with neither a receipt of its call nor its holder readable: an operator looks. */
  ownerTxUnproven: 'USDC_OWNER_TX_UNPROVEN',
  /** The RPC answered without saying which block it read from: its answer proves nothing. */
  rpcBlockUnknown: 'USDC_RPC_BLOCK_UNKNOWN',
  nonceLeaseLost: 'USDC_NONCE_LEASE_LOST',
  nonceLeaseBusy: 'USDC_NONCE_LEASE_BUSY',
  nonceWaitAborted: 'USDC_NONCE_WAIT_ABORTED',
  nonceOutOfRange: 'USDC_NONCE_OUT_OF_RANGE',
  noncePoolHeld: 'USDC_NONCE_POOL_HELD',
  solanaTxInvalid: 'USDC_SOLANA_TX_INVALID',
  solanaNotSigner: 'USDC_SOLANA_NOT_SIGNER',
} as const;
