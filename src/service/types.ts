import type { Chain, EvmChain } from '../domain/chains.ts';
import type { PermitPayload } from '../domain/permit.ts';

/**
 * The transfer-service client's public contract (implemented in this folder). Amounts are
 * micro-USDC bigints here; the client formats them as decimal strings on the wire.
 */
export type FailureKind = 'rejected' | 'rate_limited' | 'unavailable' | 'ambiguous';

export type Operation = 'estimate' | 'transfer' | 'build_tx' | 'submit' | 'status' | 'create_plant';

export type FeeEstimate = {
  readonly amount: bigint;
  readonly fee: { readonly total: bigint; readonly platform: bigint; readonly gas: bigint };
  readonly netReceive: bigint;
};

export type { PermitPayload } from '../domain/permit.ts';

export type TransferRequestBody = {
  readonly from: EvmChain;
  readonly to: Chain;
  readonly amount: bigint;
  readonly recipient: string;
  readonly permit: PermitPayload;
};

export type TransferResult = {
  readonly intentId: string;
  readonly status: string;
  readonly txHash: string | null;
};
export type BuildTxResult = {
  readonly intentId: string;
  readonly transaction: string;
  readonly expiresAt: string | null;
};
export type SubmitResult = {
  readonly intentId: string;
  readonly status: string;
  readonly txSignature: string | null;
};
export type IntentStatus = { readonly intentId: string; readonly status: string };

export type CallOptions = {
  /** Sent as the `Idempotency-Key` header; the same payload is always re-sent with the same key. */
  readonly idempotencyKey?: string;
  readonly signal?: AbortSignal;
  /**
   * The caller reports this call's failure itself (the worker's key check at start, a dry run's
   * estimates): a failure is logged at debug, not warn.
   */
  readonly quiet?: boolean;
};

export type ServiceClient = {
  estimate(req: { from: Chain; to: Chain; amount: bigint }, options?: CallOptions): Promise<FeeEstimate>;
  transfer(req: TransferRequestBody, options: CallOptions): Promise<TransferResult>;
  buildSolanaTx(
    req: { to: EvmChain; amount: bigint; fromWallet: string; recipient: string },
    options?: CallOptions,
  ): Promise<BuildTxResult>;
  submitSolanaTx(
    req: { intentId: string; signedTransaction: string },
    options: CallOptions,
  ): Promise<SubmitResult>;
  /** `undefined` when the route answers 404 (the service does not offer it, or does not know the intent). */
  getIntentStatus(intentId: string, options?: CallOptions): Promise<IntentStatus | undefined>;
};
