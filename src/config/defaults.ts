/** Every default in one place (graphile-worker's habit); README's configuration table mirrors this. */
export const DEFAULTS = {
  REDIS_URL: 'redis://127.0.0.1:6379',
  QUEUE_PREFIX: 'usdc',
  NETWORK: 'testnet',
  MAX_FEE_BPS: 100,
  WORKER_CONCURRENCY: 16,
  HTTP_PORT: 8080,
  LOG_LEVEL: 'info',
  NEW_RECIPIENT_POLICY: 'allow',
  PERMIT_DEADLINE_SECONDS: 30 * 60,
  SERVICE_CONNECT_TIMEOUT_MS: 3_000,
  SERVICE_RESPONSE_TIMEOUT_MS: 10_000,
} as const;
