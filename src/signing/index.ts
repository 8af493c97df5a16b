/** The signing layer: the only place that imports viem and @solana/kit (STYLE.md habit 6). */
export type * from './types.ts';
export { createEvmSigner, permitDeadline, PERMIT_TYPES, type PermitDomain } from './evm/evm-signer.ts';
export { createChainReader, redactUrl, type EvmChainReader } from './evm/chain-reader.ts';
export {
  createNonceManager,
  DEFAULT_NONCE_LEASE_MS,
  type NonceState,
  type RedisNonceManager,
} from './evm/nonce-manager.ts';
export { createSolanaSigner, usdcTokenAccount } from './solana/solana-signer.ts';
export {
  checkTransaction,
  evmMintRecipient,
  DEPOSIT_FOR_BURN_DISCRIMINATOR,
} from './solana/transaction-policy.ts';
export {
  ChainReadError,
  NonceLeaseLostError,
  NoncePoolHeldError,
  SigningError,
  SIGNING_ERROR_CODES,
} from './errors.ts';
