import type { Redis } from 'ioredis';
import type { Config } from '../config/config.ts';
import { workerSourceChains } from '../config/source-chains.ts';
import { isEvmChain } from '../domain/chains.ts';
import type { Logger } from '../log/logger.ts';
import { startHeartbeat } from '../metrics/worker-heartbeat.ts';
import { createWorkerMetrics, registerOwners } from '../metrics/worker-metrics.ts';
import { DEFAULT_POLICY } from '../pipeline/policy.ts';
import type { PipelineDeps } from '../pipeline/run-transfer.ts';
import { createOwnerCaches } from '../pipeline/evm/owner-caches.ts';
import { createServiceClient } from '../service/service-client.ts';
import { createChainReader } from '../signing/evm/chain-reader.ts';
import { createEvmSigners } from '../signing/evm/evm-signer.ts';
import { createNonceManager } from '../signing/evm/nonce-manager.ts';
import { createSolanaSigner } from '../signing/solana/solana-signer.ts';
import { keys } from '../store/keys.ts';
import { createOwnerBalances } from '../store/owner-balance.ts';
import { createRateLimiter } from '../store/rate-limiter.ts';
import { createSpendLimit } from '../store/spend-limit.ts';
import { createApprovalGate } from '../store/batch-hold.ts';
import { checkDurability, createRedis, VolatileRedisError, waitForRedis } from '../store/redis.ts';
import { createTransferStore } from '../store/transfer-store.ts';
import { createCallbackSender } from './callbacks.ts';
import { createIntentFollower } from './intent-follower.ts';
import { createScheduleRunner } from './schedules.ts';
import { startTreasurySampler } from '../treasury/balance-sampler.ts';
import { serviceEstimator } from '../treasury/planner.ts';
import { createTransferWorkers, type TransferWorkers } from './transfer-workers.ts';

export type RunningWorker = { readonly workers: TransferWorkers; close(): Promise<void> };

/**
 * Starts everything `usdc-batch worker` runs: the per-source-chain transfer workers, the intent
 * follower and the callback sender, after refusing a Redis that can lose acknowledged writes.
 */
export async function startWorker(config: Config, logger: Logger): Promise<RunningWorker> {
  const redis: Redis = createRedis(config.redisUrl, { role: 'worker', logger, quiet: true });
  try {
    await waitForRedis(redis, config.redisUrl);
  } catch (err) {
    redis.disconnect();
    throw err;
  }
  const durability = await checkDurability(redis);
  if (durability.durable === false) {
    if (!config.allowVolatileRedis) {
      redis.disconnect();
      throw new VolatileRedisError(
        'USDC_REDIS_VOLATILE',
        `Redis can lose acknowledged writes (${durability.reason}); the worker refuses to run on it`,
        { details: 'set ALLOW_VOLATILE_REDIS=true to run anyway (never with real money)' },
      );
    }
    logger.warn(
      { reason: durability.reason },
      'Redis is not durable; running anyway (ALLOW_VOLATILE_REDIS=true)',
    );
  } else if (durability.durable === 'unknown') {
    logger.warn({ reason: durability.reason }, 'cannot verify that Redis is durable');
  }

  const prefix = config.queuePrefix;
  // Latency and retries go to Redis, where `serve`'s /metrics reads them for every worker.
  const metrics = createWorkerMetrics({ redis, prefix, logger });
  // `API_RATE_LIMIT` is taken before every HTTP request, the client's own retries included.
  const limiter = config.apiRateLimit
    ? createRateLimiter({ redis, prefix, perSecond: config.apiRateLimit })
    : undefined;
  const service = createServiceClient({
    baseUrl: config.transferApiUrl as string,
    apiKey: config.transferApiKey!,
    connectTimeoutMs: config.serviceConnectTimeoutMs,
    responseTimeoutMs: config.serviceResponseTimeoutMs,
    logger,
    onCall: metrics.onCall,
    beforeRequest: limiter ? () => limiter.take() : undefined,
  });

  const store = metrics.countRetries(createTransferStore({ redis, prefix }));
  const chain = createChainReader({ config, logger });
  const nonces =
    config.evmPrivateKeys.length > 0
      ? createNonceManager({ redis, prefix, chainReader: chain, logger })
      : undefined;
  const evm = nonces
    ? {
        signers: createEvmSigners({ config, chainReader: chain, logger }),
        nonces,
        chain,
        // Only where a balance can be read: without EVM_RPC_URL_<CHAIN> owners go by free lease.
        balances: createOwnerBalances({ redis, prefix }),
        ownerCaches: createOwnerCaches(),
      }
    : undefined;
  const solana = config.solanaSecretKey ? await createSolanaSigner({ config, logger }) : undefined;

  const follower = createIntentFollower({
    redisUrl: config.redisUrl,
    prefix,
    service,
    store,
    logger,
    redis,
    metrics,
  });
  const callbacks = createCallbackSender({ redisUrl: config.redisUrl, prefix, redis, config, logger });
  // Every worker process takes schedule firings; BullMQ hands each firing to one of them.
  const schedules = createScheduleRunner({
    redisUrl: config.redisUrl,
    prefix,
    redis,
    config,
    logger,
    rebalance: { config, estimate: serviceEstimator(service) },
  });
  // The treasury's balances for /metrics, every TREASURY_BALANCE_INTERVAL_MS.
  const treasury = startTreasurySampler({ redis, prefix, config, logger });
  const k = keys(prefix);

  // The hooks need the workers, which need the hooks: the reference is filled in just below.
  const ref: { workers?: TransferWorkers } = {};
  const pipeline: PipelineDeps = {
    config,
    store,
    service,
    evm,
    solana,
    logger,
    policy: { ...DEFAULT_POLICY, nonceSettleWindowMs: config.nonceSettleWindowMs },
    metrics,
    isPaused: async () => (await redis.exists(k.paused)) === 1,
    spendLimit:
      config.maxDailyUsdc === undefined
        ? undefined
        : createSpendLimit({ redis, prefix, cap: config.maxDailyUsdc }),
    approvals: createApprovalGate({ redis, prefix }),
    hooks: {
      onBatchCompleted: (batchId, generation) => callbacks.completed(batchId, generation),
      onSubmitted: (batchId, transferId, intentId) => follower.follow(batchId, transferId, intentId),
      onNeedsReview: async (batchId, transferId, settleAt) => {
        if (settleAt !== null) await ref.workers?.scheduleSettle(batchId, transferId, settleAt);
      },
      onRateLimited: (ms) => ref.workers?.rateLimit(ms),
    },
  };
  const sources = workerSourceChains(config);
  if (evm) {
    // `/metrics` (serve, which may hold no key) reads the reservations of the owners registered here
    // (usdc_batch_owner_in_flight_micro_usdc). A failure costs a metric, never a payment.
    await registerOwners(
      redis,
      prefix,
      sources.filter(isEvmChain),
      evm.signers.map((s) => s.address),
    ).catch((err: unknown) =>
      logger.warn({ err: { message: (err as Error).message } }, 'could not register the owners for /metrics'),
    );
  }
  if (evm && nonces) {
    // The first permit of each chain would otherwise wait, after its estimate, for nonces(owner)
    // and then for USDC's name()/version(): read them now, while the first estimates run.
    for (const chain of sources.filter(isEvmChain)) {
      for (const signer of evm.signers) nonces.prefetch(chain, signer.address);
      evm.signers[0]?.domainFor(chain).catch(() => {});
    }
  }
  const workers = createTransferWorkers({
    redisUrl: config.redisUrl,
    prefix,
    sources,
    concurrency: config.workerConcurrency,
    pipeline,
    logger,
    redis,
    metrics,
  });
  ref.workers = workers;
  // `/metrics` counts the worker processes alive from these beats (usdc_batch_workers).
  const heartbeat = startHeartbeat({ redis, prefix, sources, logger });
  logger.info(
    {
      sources,
      concurrency: config.workerConcurrency,
      evm: evm?.signers.map((s) => s.address),
      solana: solana?.address,
    },
    'worker started',
  );

  return {
    workers,
    async close() {
      await heartbeat.stop();
      treasury.stop();
      await schedules.close();
      await workers.close();
      await follower.close();
      await callbacks.close();
      await nonces?.close();
      await metrics.close();
      service.close();
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
