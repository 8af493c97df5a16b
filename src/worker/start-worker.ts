import type { Redis } from 'ioredis';
import type { Config } from '../config/config.ts';
import { workerSourceChains } from '../config/source-chains.ts';
import type { Logger } from '../log/logger.ts';
import { startHeartbeat } from '../metrics/worker-heartbeat.ts';
import { createWorkerMetrics } from '../metrics/worker-metrics.ts';
import type { PipelineHooks } from '../pipeline/pipeline-deps.ts';
import { startAuditHeadLog } from '../store/audit-head.ts';
import { startControlsPublisher } from '../store/published-controls.ts';
import { controlSettingsOf } from '../config/control-settings.ts';
import { controlDigest } from '../domain/control-digest.ts';
import { warnOnControlDrift } from '../ops/control-drift.ts';
import { watchPrimary } from '../store/primary-watch.ts';
import { createReplicaAcks, wantedReplicas, type ReplicaAcks } from '../store/replica-acks.ts';
import { createTransferStore, type TransferStore } from '../store/transfer-store.ts';
import { createCallbackSender } from '../queue/callbacks.ts';
import { createIntentFollower } from '../queue/intent-follower.ts';
import { createScheduleRunner, type ScheduleRunnerDeps } from '../queue/schedule-runner.ts';
import { holdTimesOf } from '../domain/hold-times.ts';
import { createTransferWorkers, type TransferWorkers } from '../queue/transfer-workers.ts';
import type { TransferSpans } from '../queue/run-spans.ts';
import { activeTracing } from '../trace/tracing.ts';
import { treasuryAddresses } from '../ops/public-addresses.ts';
import { startTreasurySampler } from '../treasury/balance-sampler.ts';
import { quoteEstimator, serviceEstimator } from '../treasury/planner.ts';
import { createCctpFeeQuoter } from '../service/cctp-fee-quote.ts';
import {
  warmUpEvm,
  wireCctp,
  wireEvm,
  wirePipeline,
  wireServiceClient,
  wireSolana,
} from './pipeline-wiring.ts';
import { startAddressPublisher } from './publish-addresses.ts';
import { warnUnscreenedChains } from './onchain-wiring.ts';
import { checkServiceKey } from './service-key-check.ts';
import { openWorkerRedis } from './worker-redis.ts';
import { screenOwnAddresses, startWorkerScreening } from './screening-wiring.ts';

export type RunningWorker = { readonly workers: TransferWorkers; close(): Promise<void> };

/**
 * What a start has opened so far, each closed by `closeStarted` in the order a running worker
 * stops: first what takes new work, last the connections everything else uses.
 */
type Started = {
  readonly redis: Redis;
  acks?: ReplicaAcks;
  primary?: { stop(): void };
  metrics?: { close(): Promise<void> };
  service?: { close(): void };
  nonces?: { close(): Promise<void> } | undefined;
  cctpLease?: { close(): Promise<void> } | undefined;
  follower?: { close(): Promise<void> };
  callbacks?: { close(): Promise<void> };
  schedules?: { close(): Promise<void> };
  workers?: TransferWorkers;
  heartbeat?: { stop(): Promise<void> };
  treasury?: { stop(): void };
  addresses?: { stop(): void };
  auditHead?: { stop(): void };
  controls?: { stop(): Promise<void> };
  screening?: { stop(): void };
};

/**
 * Starts everything `usdc-batch worker` runs: the per-source-chain transfer workers, the intent
 * follower and the callback sender, after refusing a Redis that can lose acknowledged writes. A
 * start that fails half-way closes what it had opened, so nothing is left running or connected.
 */
export async function startWorker(config: Config, logger: Logger): Promise<RunningWorker> {
  const started: Started = { redis: await openWorkerRedis(config, logger) };
  try {
    const workers = await startOn(started, config, logger);
    return { workers, close: () => closeStarted(started) };
  } catch (err) {
    await closeStarted(started).catch((closeErr: unknown) =>
      logger.warn({ err: closeErr }, 'could not close everything a failed start had opened'),
    );
    throw err;
  }
}

/**
 * The schedules' runner: every worker process takes schedule firings and BullMQ hands each firing to
 * one of them; a rebalancing policy plans on the service's fees, or on Circle's when its moves take
 * CCTP (through the workers' shared gate).
 */
function startSchedules(
  connection: Omit<ScheduleRunnerDeps, 'config' | 'rebalance'>,
  config: Config,
  service: ReturnType<typeof wireServiceClient>,
  cctp: ReturnType<typeof wireCctp>,
): ReturnType<typeof createScheduleRunner> {
  return createScheduleRunner({
    ...connection,
    config,
    rebalance: {
      config,
      estimate: serviceEstimator(service),
      cctpEstimate: cctp && ((via) => quoteEstimator(createCctpFeeQuoter(cctp.api, via))),
    },
  });
}

/** Opens the worker's parts on its Redis, noting each in `started` as soon as it is open. */
async function startOn(started: Started, config: Config, logger: Logger): Promise<TransferWorkers> {
  const { redis } = started;
  const prefix = config.queuePrefix;
  // Latency and retries go to Redis, where `serve`'s /metrics reads them for every worker.
  const metrics = (started.metrics = createWorkerMetrics({ redis, prefix, logger }));
  // docs/screening.md: a list that cannot be read or parsed stops the start here (exit 2).
  const screening = (started.screening = await startWorkerScreening({
    config,
    redis,
    prefix,
    logger,
    metrics,
  }));
  const service = (started.service = wireServiceClient({ config, redis, prefix, logger, metrics }));
  const store = metrics.countRetries(createTransferStore({ redis, prefix }));
  // docs/replicated-redis.md: sends wait for the replicas; a failover seen is logged.
  const acks = (started.acks = createReplicaAcks({
    redis,
    prefix,
    setting: config.redisReplicaAcks,
    timeoutMs: config.redisReplicaAckTimeoutMs,
    logger,
  }));
  started.primary = watchPrimary({ redis, prefix: config.queuePrefix, logger });
  const evm = wireEvm({ config, redis, prefix, acks, logger });
  started.nonces = evm?.nonces;
  const solana = await wireSolana({ config, logger });
  const own = await publishOwnAddresses(started, { config, prefix, logger, evm, solana });
  screenOwnAddresses(
    screening.lists,
    [...own.evmOwners, ...(own.solana ? [own.solana.address] : [])],
    logger,
  );

  const connection = { endpoint: config, prefix, redis, logger };
  const spans = await transferSpans(store);
  const cctp = wireCctp({ config, redis, prefix, acks, evm, logger });
  started.cctpLease = cctp?.lease;
  const follower = (started.follower = createIntentFollower({
    ...connection,
    service,
    store,
    metrics,
    spans,
    cctp: cctp && { cctp, config },
    timing: { claimLeaseMs: holdTimesOf(config.workerLockMs).followClaimMs },
  }));
  const callbacks = (started.callbacks = createCallbackSender({ ...connection, config }));
  started.schedules = startSchedules(connection, config, service, cctp);
  // The treasury's balances for /metrics, every TREASURY_BALANCE_INTERVAL_MS.
  started.treasury = startTreasurySampler({ redis, prefix, config, addresses: own, logger });

  // The hooks need the workers, which need the hooks: the reference is filled in below.
  const ref: { workers?: TransferWorkers } = {};
  const hooks = pipelineHooks(ref, callbacks, follower);
  const pipeline = wirePipeline({
    config,
    redis,
    prefix,
    store,
    acks,
    service,
    evm,
    solana,
    cctp,
    logger,
    metrics,
    hooks,
    screening: screening.gate,
  });
  const sources = workerSourceChains(config);
  // The owners' chain reads (nonces, USDC's domain, balances) go out while the key is checked.
  const warm = evm ? warmUpEvm({ redis, prefix, evm, sources, logger }) : undefined;
  // A wrong TRANSFER_API_KEY stops the start here (exit 2), before any row is taken.
  await checkServiceKey({ service, sources, logger });
  await warm;
  const workers =
    (ref.workers =
    started.workers =
      createTransferWorkers({
        ...connection,
        sources,
        concurrency: config.workerConcurrency,
        jobsKept: config.transferJobsKept,
        pipeline,
        metrics,
        spans,
      }));
  // `/metrics` counts the worker processes alive from these beats (usdc_batch_workers).
  started.heartbeat = startHeartbeat({ redis, prefix, sources, logger });
  await publishWorkerControls(started, config, logger);
  // The schedules' firings append to AUDIT_LOG_FILE: its head logged hourly and at stop.
  started.auditHead = startAuditHeadLog({ file: config.auditLogFile, logger });
  await logStarted({ acks, config, logger }, { sources, evm, solana });
  return workers;
}

/**
 * The controls this worker enforces before signing (docs/promises.md, promise 5): published for the
 * other processes to compare with, and compared with the other running workers' at start.
 */
async function publishWorkerControls(started: Started, config: Config, logger: Logger): Promise<void> {
  const settings = controlSettingsOf(config);
  const redis = started.redis;
  const prefix = config.queuePrefix;
  const publisher = startControlsPublisher({
    redis,
    prefix,
    role: 'worker',
    digest: controlDigest(settings),
    settings,
    logger,
  });
  started.controls = publisher;
  await warnOnControlDrift({ redis, prefix, settings, logger, self: publisher.process });
}

/** The treasury's public addresses: published for the processes that hold no key, and sampled. */
async function publishOwnAddresses(
  started: Started,
  p: {
    readonly config: Config;
    readonly prefix: string;
    readonly logger: Logger;
    readonly evm: ReturnType<typeof wireEvm>;
    readonly solana: Awaited<ReturnType<typeof wireSolana>>;
  },
): Promise<Awaited<ReturnType<typeof treasuryAddresses>>> {
  const { config, prefix, logger, evm, solana } = p;
  const redis = started.redis;
  const own = await treasuryAddresses({
    config: {
      network: config.network,
      evmOwnerAddresses: evm?.signers.map((s) => s.address) ?? [],
      solanaAddress: solana?.address,
    },
    prefix,
  });
  started.addresses = await startAddressPublisher({
    redis,
    prefix,
    addresses: { evm: own.evmOwners, solana: own.solana?.address },
    logger,
  });

  return own;
}

/** What the pipeline tells the rest of the worker: completions, intents to follow, settles, 429s. */
function pipelineHooks(
  ref: { workers?: TransferWorkers },
  callbacks: ReturnType<typeof createCallbackSender>,
  follower: ReturnType<typeof createIntentFollower>,
): PipelineHooks {
  return {
    onBatchCompleted: (batchId, generation) => callbacks.completed(batchId, generation),
    onSubmitted: (batchId, transferId, intentId) => follower.follow(batchId, transferId, intentId),
    onSubmittedAgain: (batchId, transferId, intentId) => follower.followAgain(batchId, transferId, intentId),
    onNeedsReview: async (batchId, transferId, settleAt) => {
      if (settleAt !== null) await ref.workers?.scheduleSettle(batchId, transferId, settleAt);
    },
    onRateLimited: (ms) => ref.workers?.rateLimit(ms),
  };
}

/** The start's one line: what this worker takes, and what its sends wait for. */
async function logStarted(
  deps: { readonly acks: ReplicaAcks; readonly config: Config; readonly logger: Logger },
  what: {
    readonly sources: ReturnType<typeof workerSourceChains>;
    readonly evm: ReturnType<typeof wireEvm>;
    readonly solana: Awaited<ReturnType<typeof wireSolana>>;
  },
): Promise<void> {
  const { acks, config, logger } = deps;
  const { sources, evm, solana } = what;
  // What sends wait for: the replicas Redis has had (REDIS_REPLICA_ACKS=auto) or the setting.
  const site = await acks.site();
  logger.info(
    {
      sources,
      concurrency: config.workerConcurrency,
      replicaAcks: wantedReplicas(config.redisReplicaAcks, site),
      evm: evm?.signers.map((s) => s.address),
      solana: solana?.address,
    },
    'worker started',
  );
  warnUnscreenedChains(config, logger);
}

/**
 * With tracing on (docs/traces.md), each transfer's runs and intent polls as spans of its trace;
 * their code (and OpenTelemetry's API) is loaded only then.
 */
async function transferSpans(store: TransferStore): Promise<TransferSpans | undefined> {
  const tracing = activeTracing();
  if (!tracing) return undefined;
  const { createTransferSpans } = await import('../queue/run-spans.ts');
  return createTransferSpans({ tracer: tracing.tracer, store });
}

/** Closes what was started, in the order a running worker stops. */
async function closeStarted(s: Started): Promise<void> {
  await s.heartbeat?.stop();
  s.auditHead?.stop();
  await s.controls?.stop();
  s.screening?.stop();
  s.addresses?.stop();
  s.treasury?.stop();
  await s.schedules?.close();
  await s.workers?.close();
  await s.follower?.close();
  await s.callbacks?.close();
  await s.nonces?.close();
  await s.cctpLease?.close();
  await s.metrics?.close();
  s.service?.close();
  s.primary?.stop();
  await s.acks?.close();
  await s.redis.quit().catch(() => s.redis.disconnect());
}
