import { DEFAULT_WORKER_LOCK_MS } from '../domain/hold-times.ts';

/**
 * Every default in one place (graphile-worker's habit); the configuration reference
 * (src/config/variables.ts → docs/configuration.md) shows these values.
 */
export const DEFAULTS = {
  REDIS_URL: 'redis://127.0.0.1:6379',
  QUEUE_PREFIX: 'usdc',
  // docs/replicated-redis.md: wait for every replica the primary has had, at most 5 s a write.
  REDIS_REPLICA_ACKS: 'auto',
  REDIS_REPLICA_ACK_TIMEOUT_MS: 5_000,
  NETWORK: 'testnet',
  MAX_FEE_BPS: 100,
  WORKER_CONCURRENCY: 16,
  // Finished transfer jobs kept per queue: completed a day / 1,000, failed a week / 100,000.
  TRANSFER_JOBS_KEPT: '1d/1000,7d/100000',
  // How often each worker reads the treasury's balances for /metrics; 0: never.
  TREASURY_BALANCE_INTERVAL_MS: 60_000,
  HTTP_HOST: '127.0.0.1',
  HTTP_PORT: 8080,
  // A request's headers must arrive within 10 s of the connection (or of the previous request),
  // and the whole request, body included, within 30 s (a 10 MB body needs ~350 KB/s); a kept-alive
  // connection idle for 5 s is closed; at most 1,000 connections are open at once.
  HTTP_HEADERS_TIMEOUT_MS: 10_000,
  HTTP_REQUEST_TIMEOUT_MS: 30_000,
  HTTP_IDLE_TIMEOUT_MS: 5_000,
  HTTP_MAX_CONNECTIONS: 1_000,
  HTTP_AUTH_FAILURE_LIMIT: 20,
  LOG_LEVEL: 'info',
  NEW_RECIPIENT_POLICY: 'allow',
  APPROVALS_REQUIRED: 1,
  // docs/screening.md: a sanctions list older than a week stops signing; USDC's own controls read on chain.
  SCREENING_MAX_AGE: '7d',
  SCREENING_ONCHAIN: 'on',
  PERMIT_DEADLINE_SECONDS: 30 * 60,
  SERVICE_CONNECT_TIMEOUT_MS: 3_000,
  SERVICE_RESPONSE_TIMEOUT_MS: 10_000,
  NONCE_SETTLE_WINDOW_MS: 20_000,
  // domain/hold-times.ts: a dead worker's transfers are taken over within about a minute.
  WORKER_LOCK_MS: DEFAULT_WORKER_LOCK_MS,
  // docs/cctp.md: the road a batch takes when it names none.
  TRANSFER_VIA: 'service',
} as const;
