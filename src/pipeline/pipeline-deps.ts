import type { Config } from '../config/config.ts';
import type { EvmChain } from '../domain/chains.ts';
import type { TransferState } from '../domain/transfer.ts';
import type { Logger } from '../log/logger.ts';
import type { ServiceClient } from '../service/types.ts';
import type { ChainReader, EvmSigner, NonceManager, SolanaSigner } from '../signing/types.ts';
import type { ApprovalGate } from '../store/batch-hold.ts';
import type { SpendLimit } from '../store/spend-limit.ts';
import type { TransferStore } from '../store/transfer-store.ts';
import type { PipelinePolicy } from './policy.ts';

/** What one transfer's pipeline runs on; wired by the queue layer (worker-runtime.ts). */
export type PipelineDeps = {
  readonly config: Config;
  readonly store: TransferStore;
  readonly service: ServiceClient;
  readonly evm?: { signer: EvmSigner; nonces: NonceManager; chain: ChainReader } | undefined;
  readonly solana?: SolanaSigner | undefined;
  readonly logger: Logger;
  readonly policy?: PipelinePolicy;
  readonly hooks?: PipelineHooks;
  /** Numbers for operators (worker-metrics.ts); never waited on, never failing a payment. */
  readonly metrics?: PipelineMetrics | undefined;
  /** True while an operator has paused all processing. */
  readonly isPaused?: () => Promise<boolean>;
  /** `MAX_DAILY_USDC`, when set: reserved before a payload is made, released if nothing was sent. */
  readonly spendLimit?: SpendLimit | undefined;
  /** Held batches and recipients removed from the address book: checked before a payload is made. */
  readonly approvals?: ApprovalGate | undefined;
  readonly now?: () => number;
  readonly random?: () => number;
};

export type PipelineHooks = {
  /** The batch became complete (every transfer final); `generation` counts completions. */
  onBatchCompleted?(batchId: string, generation: number): Promise<void> | void;
  /** A transfer was submitted: follow its intent. */
  onSubmitted?(batchId: string, transferId: string, intentId: string): Promise<void> | void;
  /** A transfer ended needs_review with a payload that may settle itself after `at` (ms). */
  onNeedsReview?(batchId: string, transferId: string, settleAt: number | null): Promise<void> | void;
  /** The service answered 429: slow the whole queue for `ms`. */
  onRateLimited?(ms: number): Promise<void> | void;
};

/**
 * How a refused first send of a permit was settled from the chain (evm-refused-permit.ts):
 * `moved` the owner's nonce moved under the worker (signed elsewhere); `rewound` presumed-used
 * permits below were proven dead and the pool moved back; `held` a presumed-used permit below may
 * still execute, so the owner's transfers wait; `final` the chain stayed at our nonce, the refusal
 * was about something else; `unknown` the chain could not tell in time.
 */
export type NonceSettleOutcome = 'moved' | 'rewound' | 'held' | 'final' | 'unknown';

export type PipelineMetrics = {
  nonceSettled(chain: EvmChain, outcome: NonceSettleOutcome, waitedMs: number): void;
};

/** What the queue layer should do with the job. */
export type StepOutcome =
  | { readonly kind: 'done'; readonly state: TransferState }
  | { readonly kind: 'later'; readonly delayMs: number; readonly reason: string };
