import type { Config } from '../config/config.ts';
import type { EvmChain } from '../domain/chains.ts';
import type { TransferState } from '../domain/transfer.ts';
import type { Logger } from '../log/logger.ts';
import type { ServiceClient } from '../service/types.ts';
import type { ChainReader, EvmSigner, NonceManager, SolanaSigner } from '../signing/types.ts';
import type { ApprovalGate } from '../store/batch-hold.ts';
import type { ControlMarks } from '../store/batch-control-marks.ts';
import type { ListHit } from '../config/screening/screening-lists.ts';
import type { UsdcControls } from '../signing/usdc-controls.ts';
import type { TransferRecord } from '../store/transfer-record.ts';
import type { OwnerBalances } from '../store/owner-balance.ts';
import type { SpendLimit } from '../store/spend-limit.ts';
import type { ReplicaAcks } from '../store/replica-acks.ts';
import type { TransferStore } from '../store/transfer-store.ts';
import type { OwnerCaches } from './evm/owner-caches.ts';
import type { CctpDeps } from './cctp/cctp-deps.ts';
import type { PipelinePolicy } from './policy.ts';

/** What one transfer's pipeline runs on; wired by the worker (src/worker/pipeline-wiring.ts). */
export type PipelineDeps = {
  readonly config: Config;
  readonly store: TransferStore;
  /**
   * Replica acknowledgements (docs/replicated-redis.md): a send waits until the replicas
   * REDIS_REPLICA_ACKS asks for hold its mark. Absent: nothing is waited for (tests, tools).
   */
  readonly acks?: ReplicaAcks | undefined;
  readonly service: ServiceClient;
  /** What EVM transfers run on; absent in a worker without an EVM key. */
  readonly evm?: EvmDeps | undefined;
  readonly solana?: SolanaSigner | undefined;
  /** What the CCTP road runs on; absent in a worker without an EVM key. */
  readonly cctp?: CctpDeps | undefined;
  readonly logger: Logger;
  readonly policy?: PipelinePolicy;
  readonly hooks?: PipelineHooks;
  /** Numbers for operators (worker-metrics.ts); never waited on, never failing a payment. */
  readonly metrics?: PipelineMetrics | undefined;
  /** `MAX_DAILY_USDC`, when set: reserved before a payload is made, released if nothing was sent. */
  readonly spendLimit?: SpendLimit | undefined;
  /** Held batches and recipients removed from the address book: checked before a payload is made. */
  readonly approvals?: ApprovalGate | undefined;
  /** This worker's own controls, applied before signing (worker-controls.ts); absent: none. */
  readonly controls?: WorkerControls | undefined;
  /** USDC's own controls read on chain before signing (SCREENING_ONCHAIN=on); absent: not read. */
  readonly onchain?: OnchainScreening | undefined;
  /** Sanctions lists, checked before a payload is made (screening-check.ts); absent: no screening. */
  readonly screening?: ScreeningGate | undefined;
  readonly now?: () => number;
  readonly random?: () => number;
};

/**
 * The treasury owners (one signer per key, in the configured order), their nonce pools, the chain
 * reads and, where balances can be read, their reservations and this process's caches of them
 * (evm/evm-owner.ts). Passed to the EVM flow explicitly (evm/evm-flow.ts evmFlow).
 */
export type EvmDeps = {
  readonly signers: readonly EvmSigner[];
  readonly nonces: NonceManager;
  readonly chain: ChainReader;
  readonly balances?: OwnerBalances | undefined;
  /** Made by the wiring (createOwnerCaches), one per process. */
  readonly ownerCaches: OwnerCaches;
};

export type PipelineHooks = {
  /** The batch became complete (every transfer final); `generation` counts completions. */
  onBatchCompleted?(batchId: string, generation: number): Promise<void> | void;
  /** A transfer was submitted: follow its intent. */
  onSubmitted?(batchId: string, transferId: string, intentId: string): Promise<void> | void;
  /**
   * A job ran again for a transfer already submitted, its intent not final: follow it unless it is
   * followed (its run may have died between the two writes).
   */
  onSubmittedAgain?(batchId: string, transferId: string, intentId: string): Promise<void> | void;
  /** A transfer ended needs_review with a payload that may settle itself after `at` (ms). */
  onNeedsReview?(batchId: string, transferId: string, settleAt: number | null): Promise<void> | void;
  /** The service answered 429: slow the whole queue for `ms`. */
  onRateLimited?(ms: number): Promise<void> | void;
};

/**
 * How a refused first send of a permit was settled from the chain (evm/evm-refused-permit.ts):
 * `moved` the owner's nonce moved under the worker (signed elsewhere); `rewound` presumed-used
 * permits below were proven dead and the pool moved back; `held` a presumed-used permit below may
 * still execute, so the owner's transfers wait; `final` the chain stayed at our nonce, the refusal
 * was about something else; `unknown` the chain could not tell in time.
 */
export type NonceSettleOutcome = 'moved' | 'rewound' | 'held' | 'final' | 'unknown';

export type PipelineMetrics = {
  nonceSettled(chain: EvmChain, outcome: NonceSettleOutcome, waitedMs: number): void;
  /** A transfer of (chain, owner) was accepted by the service. */
  ownerPaid?(chain: EvmChain, owner: string): void;
  /** A transfer found the (chain, owner)'s nonce lease taken and waited for it. */
  ownerLeaseWait?(chain: EvmChain, owner: string): void;
  /** A transfer refused by screening, by check (`usdc_batch_screening_refusals_total{check}`). */
  screeningRefused?(check: ScreeningCheck): void;
};

/** What refused a transfer: a sanctions list, USDC's blacklist (recipient or owner), a frozen account. */
export type ScreeningCheck = 'list' | 'blacklist' | 'owner_blacklist' | 'frozen';

/**
 * What the queue layer should do with the job: `done` — the run is over, the transfer is in
 * `state`; `record` is the transfer as this run left it (the job's result is built from it, never
 * from a later read), absent only when the transfer has no record; `ended` when this run made it
 * final (it counts in the metrics once). `later` — hand the job back for `delayMs`.
 */
export type StepOutcome =
  | {
      readonly kind: 'done';
      readonly state: TransferState;
      readonly record?: TransferRecord | undefined;
      readonly ended?: boolean;
    }
  | { readonly kind: 'later'; readonly delayMs: number; readonly reason: string; readonly wait: WaitKind };

/**
 * Why a run hands its job back (a bounded set, the `kind` label of the waits metric): another run
 * holds the transfer, processing is paused, the worker stops, it lacks the key, the (chain, owner)
 * nonce lease or pool, the chain has not settled a refused permit yet (or mined an owner's earlier
 * CCTP approve or burn), the daily cap, a transient failure or a 429 of the service, a needs_review
 * payload not yet past its deadline, Redis replicas that did not confirm a send's mark in time,
 * stale sanctions screening.
 */
export type WaitKind =
  | 'lock'
  | 'paused'
  | 'shutdown'
  | 'no_key'
  | 'nonce_lease'
  | 'nonce_pool'
  | 'nonce_chain'
  | 'daily_cap'
  | 'balance'
  | 'retry'
  | 'rate_limit'
  | 'settle'
  | 'replicas'
  | 'screening';

/*
 * The pre-sign checks' dependencies, wired by the worker (src/worker/): declared here, beside
 * PipelineDeps, so that the modules that run the checks (worker-controls.ts, onchain-screening.ts,
 * screening-check.ts) and the run's context import this module, never the other way round.
 */

/**
 * Controls hold wherever a batch comes from (docs/promises.md, promise 5): before a transfer's first
 * payload is made, the worker — the one process that signs — applies the controls it is configured
 * with, whatever the enqueuing process had. The batch-wide judgement (the approval threshold,
 * APPROVALS_REQUIRED, the new-recipient policy and cap, MAX_BATCH_USDC) is made once per batch and
 * set of controls by `check` (src/worker/batch-controls.ts), which holds the batch when those
 * controls would have; the hold then keeps this transfer unsigned (recipient-check.ts) until
 * `approve` releases it.
 */
export type WorkerControls = {
  /** This worker's MAX_TRANSFER_USDC (micro-USDC). */
  readonly maxTransferUsdc: bigint | undefined;
  /**
   * Judges the batch under this worker's controls (holding it when they would); a refusal of all its
   * rows. `marks`: the batch's control marks as the run read them with its approval facts
   * (src/store/batch-hold.ts); absent, they are read here.
   */
  check(batchId: string, marks?: ControlMarks): Promise<ControlsVerdict>;
};

export type ControlsVerdict = {
  readonly refusal?: { readonly code: string; readonly message: string };
  /** Not judged yet: why the transfer waits (its batch is still being enqueued). */
  readonly wait?: string;
  /**
   * The batch was judged in this check, not answered by its marks: it may have been held, so what
   * was read of it before (its approval facts) is read again.
   */
  readonly judged?: boolean;
};

/** What the worker wires when SCREENING_ONCHAIN is on (src/worker/pipeline-wiring.ts). */
export type OnchainScreening = {
  readonly controls: UsdcControls;
  /** Records a refusal in the audit (`who`: the chain that refused); throws when it cannot. */
  audit(entry: {
    readonly who: string;
    readonly batch: string;
    readonly detail: Record<string, unknown>;
  }): Promise<void>;
};

/** What a check that refused says: which check, the refusal's code, who refused (the list). */
export type ScreeningRefusal = {
  readonly check: 'list';
  readonly code: 'recipient_sanctioned';
  readonly who: string;
  readonly message: string;
};

/** The sanctions lists in force and where refusals go, as the pipeline sees them (wired by the worker). */
export type ScreeningGate = {
  lookup(address: string): ListHit | undefined;
  staleReason(now: number): string | undefined;
  /** Audits and counts a refusal (docs/audit.md); called before the transfer is made final. */
  refused(batchId: string, transferId: string, refusal: ScreeningRefusal): Promise<void>;
};
