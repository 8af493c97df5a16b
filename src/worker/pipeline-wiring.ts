import type { Redis } from 'ioredis';
import type { Config } from '../config/config.ts';
import { isEvmChain, type Chain } from '../domain/chains.ts';
import type { Logger } from '../log/logger.ts';
import { registerOwners, type WorkerMetrics } from '../metrics/worker-metrics.ts';
import type { PipelineDeps, PipelineHooks } from '../pipeline/pipeline-deps.ts';
import { holdTimesOf } from '../domain/hold-times.ts';
import { DEFAULT_POLICY, type PipelinePolicy } from '../pipeline/policy.ts';
import { createServiceClient } from '../service/service-client.ts';
import type { ServiceClient } from '../service/types.ts';
import { createChainReader } from '../signing/evm/chain-reader.ts';
import { createEvmSigners } from '../signing/evm/evm-signer.ts';
import { createNonceManager } from '../signing/evm/nonce-manager.ts';
import { createSolanaSigner } from '../signing/solana/solana-signer.ts';
import { createApprovalGate } from '../store/batch-hold.ts';
import { wantedReplicas, type ReplicaAcks } from '../store/replica-acks.ts';
import { createWorkerControls } from './batch-controls.ts';
import { createOwnerBalances } from '../store/owner-balance.ts';
import { createRateLimiter } from '../store/rate-limiter.ts';
import { createSpendLimit } from '../store/spend-limit.ts';
import type { TransferStore } from '../store/transfer-store.ts';
import { createOwnerCaches } from '../pipeline/evm/owner-caches.ts';
import { warmOwnerBalance } from '../pipeline/evm/owner-balance-reading.ts';
import type { CctpDeps } from '../pipeline/cctp/cctp-deps.ts';
import { createCctpApi } from '../service/cctp-api.ts';
import { pendingBurns } from '../store/cctp-allowance-need.ts';
import { createCctpReads } from '../signing/evm/cctp-reads.ts';
import { createOwnerTxSender } from '../signing/evm/owner-tx/owner-tx-sender.ts';
import { createCctpGate } from '../store/cctp-gate.ts';
import { createCctpLease } from './cctp-lease-waits.ts';
import { wireOnchainScreening } from './onchain-wiring.ts';

/** The service client of a worker: its calls timed into the metrics, under `API_RATE_LIMIT`. */
export function wireServiceClient(deps: {
  readonly config: Config;
  readonly redis: Redis;
  readonly prefix: string;
  readonly logger: Logger;
  readonly metrics?: Pick<WorkerMetrics, 'onCall'> | undefined;
}): ReturnType<typeof createServiceClient> {
  const { config, redis, prefix, logger } = deps;
  // `API_RATE_LIMIT` is taken before every HTTP request, the client's own retries included.
  const limiter = config.apiRateLimit
    ? createRateLimiter({ redis, prefix, perSecond: config.apiRateLimit })
    : undefined;
  return createServiceClient({
    baseUrl: config.transferApiUrl as string,
    apiKey: config.transferApiKey!,
    connectTimeoutMs: config.serviceConnectTimeoutMs,
    responseTimeoutMs: config.serviceResponseTimeoutMs,
    logger,
    onCall: deps.metrics?.onCall,
    beforeRequest: limiter ? () => limiter.take() : undefined,
  });
}

export type EvmParts = {
  readonly signers: ReturnType<typeof createEvmSigners>;
  readonly nonces: ReturnType<typeof createNonceManager>;
  readonly chain: ReturnType<typeof createChainReader>;
  readonly balances: ReturnType<typeof createOwnerBalances>;
  /** The owners' balance readings and receipt lookups, one set per worker process. */
  readonly ownerCaches: ReturnType<typeof createOwnerCaches>;
};

/**
 * The EVM side of a worker holding keys: one signer per key, the shared nonce pools, the chain
 * reads and the owners' balance reservations. `undefined` without `EVM_PRIVATE_KEYS`.
 */
export function wireEvm(deps: {
  readonly config: Config;
  readonly redis: Redis;
  readonly prefix: string;
  /**
   * The sends' replica acknowledgements, where the pipeline has them: a preparer is woken as the
   * commit before it is sent only while the marks need no replica (without them, no mark waits for
   * one: always; docs/nonces.md).
   */
  readonly acks?: ReplicaAcks | undefined;
  readonly logger: Logger;
}): EvmParts | undefined {
  const { config, redis, prefix, acks, logger } = deps;
  if (config.evmPrivateKeys.length === 0) return undefined;
  const chain = createChainReader({ config, logger });
  return {
    signers: createEvmSigners({ config, chainReader: chain, logger }),
    nonces: createNonceManager({
      redis,
      prefix,
      chainReader: chain,
      logger,
      leaseMs: holdTimesOf(config.workerLockMs).nonceLeaseMs,
      wakePreparerOnCommit: () => marksNeedNoReplica(acks),
    }),
    chain,
    // Only where a balance can be read: without EVM_RPC_URL_<CHAIN> owners go by free lease.
    balances: createOwnerBalances({ redis, prefix }),
    ownerCaches: createOwnerCaches(),
  };
}

/**
 * Whether a send's mark is acknowledged without a replica: no acknowledgements at all, or the last
 * write's site is known and asks for none (REDIS_REPLICA_ACKS=0, or `auto` on a primary that never
 * had a replica). A site not known yet: no.
 */
export function marksNeedNoReplica(acks: Pick<ReplicaAcks, 'setting' | 'lastSite'> | undefined): boolean {
  if (!acks) return true;
  const site = acks.lastSite();
  return site !== undefined && site.primary !== '' && wantedReplicas(acks.setting, site) === 0;
}

/** The Solana signer when a Solana key is configured (the key is checked again here: it may throw). */
export async function wireSolana(deps: {
  readonly config: Config;
  readonly logger: Logger;
}): Promise<PipelineDeps['solana']> {
  return deps.config.solanaSecretKey ? await createSolanaSigner(deps) : undefined;
}

/**
 * What one transfer's pipeline runs on, as a worker process wires it: the operator's pause, the
 * daily cap, the approval gate, the policy with the configured nonce-settle window.
 */
export function wirePipeline(deps: {
  readonly config: Config;
  readonly redis: Redis;
  readonly prefix: string;
  readonly store: TransferStore;
  /** Replica acknowledgements before sends (docs/replicated-redis.md). */
  readonly acks?: PipelineDeps['acks'];
  readonly service: ServiceClient;
  /** `wireEvm`'s parts; the pipeline needs only their interfaces (a test may watch its nonce pool). */
  readonly evm: PipelineDeps['evm'];
  readonly solana: PipelineDeps['solana'];
  readonly cctp?: CctpDeps | undefined;
  readonly logger: Logger;
  readonly metrics?: PipelineDeps['metrics'];
  readonly hooks?: PipelineHooks | undefined;
  readonly policy?: PipelinePolicy | undefined;
  /** The sanctions lists checked before signing (screening-wiring.ts); absent: none. */
  readonly screening?: PipelineDeps['screening'];
}): PipelineDeps {
  const { config, redis, prefix } = deps;
  return {
    config,
    store: deps.store,
    acks: deps.acks,
    service: deps.service,
    evm: deps.evm,
    solana: deps.solana,
    cctp: deps.cctp,
    logger: deps.logger,
    policy: deps.policy ?? {
      ...DEFAULT_POLICY,
      nonceSettleWindowMs: config.nonceSettleWindowMs,
      holds: holdTimesOf(config.workerLockMs),
    },
    metrics: deps.metrics,
    spendLimit:
      config.maxDailyUsdc === undefined
        ? undefined
        : createSpendLimit({ redis, prefix, cap: config.maxDailyUsdc }),
    approvals: createApprovalGate({ redis, prefix }),
    controls: createWorkerControls({ redis, prefix, config: deps.config, logger: deps.logger }),
    onchain: wireOnchainScreening({ config, redis, prefix }),
    screening: deps.screening,
    ...(deps.hooks ? { hooks: deps.hooks } : {}),
  };
}

/**
 * Reads ahead what the first transfers would wait for, and registers the owners for `/metrics`:
 * neither can fail a start.
 */
export async function warmUpEvm(deps: {
  readonly redis: Redis;
  readonly prefix: string;
  readonly evm: EvmParts;
  readonly sources: readonly Chain[];
  readonly logger: Logger;
}): Promise<void> {
  const { redis, prefix, evm, logger } = deps;
  const chains = deps.sources.filter(isEvmChain);
  // `/metrics` (serve, which may hold no key) reads the reservations of the owners registered here
  // (usdc_batch_owner_in_flight_micro_usdc). A failure costs a metric, never a payment.
  await registerOwners(
    redis,
    prefix,
    chains,
    evm.signers.map((s) => s.address),
  ).catch((err: unknown) =>
    logger.warn({ err: { message: (err as Error).message } }, 'could not register the owners for /metrics'),
  );
  // The first permit of each chain would otherwise wait, after its estimate, for nonces(owner),
  // USDC's name()/version() and the owner's balance: read them now, while the first estimates run.
  for (const chain of chains) {
    for (const signer of evm.signers) {
      evm.nonces.prefetch(chain, signer.address);
      warmOwnerBalance({ caches: evm.ownerCaches, reader: evm.chain, chain, owner: signer.address });
    }
    evm.signers[0]?.domainFor(chain).catch(() => {});
  }
}

/**
 * The CCTP road's parts (docs/cctp.md): Circle's attestation API behind the Redis-shared gate, the
 * owners' own transactions, the chain reads and the (chain, owner) lease. `undefined` without an
 * EVM key: CCTP transfers then wait for a worker that has one.
 */
export function wireCctp(deps: {
  readonly config: Config;
  readonly redis: Redis;
  readonly prefix: string;
  readonly acks?: PipelineDeps['acks'];
  readonly evm: EvmParts | undefined;
  readonly logger: Logger;
}): (CctpDeps & { readonly lease: { close(): Promise<void> } }) | undefined {
  const { config, redis, prefix, evm } = deps;
  if (!evm) return undefined;
  return {
    api: createCctpApi({ baseUrl: config.cctpApiUrl, gate: createCctpGate({ redis, prefix }) }),
    sender: createOwnerTxSender({ redis, prefix, acks: deps.acks, config, logger: deps.logger }),
    reads: createCctpReads({ config }),
    owners: evm.signers.map((s) => s.address),
    lease: createCctpLease({
      redis,
      prefix,
      ttlMs: holdTimesOf(config.workerLockMs).cctpLeaseMs,
      logger: deps.logger,
    }),
    pendingBurns: (batchId, chain, owner) => pendingBurns(redis, prefix, { batchId, chain, owner }),
  };
}
