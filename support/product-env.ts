import { TEST_EVM_KEY, type SandboxInfo } from './sandbox.ts';

/** The tests' `WORKER_LOCK_MS` (the default is 30000). */
export const TEST_WORKER_LOCK_MS = '10000';

/**
 * The environment `enqueue` and `worker` get: everything pointed at one Redis and one sandbox. A
 * dead worker's holds lapse after 10 s rather than 30 s (`WORKER_LOCK_MS`, docs/configuration.md):
 * the crash and failover tests wait for them, and a third of the wait is the same takeover.
 */
export function productEnv(p: {
  redisUrl: string;
  prefix: string;
  sandbox: SandboxInfo;
  solanaKeyFile: string;
  extra?: Record<string, string> | undefined;
}): Record<string, string> {
  const { sandbox } = p;
  return {
    REDIS_URL: p.redisUrl,
    QUEUE_PREFIX: p.prefix,
    TRANSFER_API_URL: sandbox.url,
    TRANSFER_API_KEY: sandbox.api_key,
    PERMIT_SPENDER: sandbox.spender,
    EVM_PRIVATE_KEY: TEST_EVM_KEY,
    SOLANA_KEYPAIR_FILE: p.solanaKeyFile,
    EVM_RPC_URL_ETH: sandbox.rpc.ETH,
    EVM_RPC_URL_BASE: sandbox.rpc.BASE,
    EVM_RPC_URL_ARB: sandbox.rpc.ARB,
    EVM_RPC_URL_POLYGON: sandbox.rpc.POLYGON,
    LOG_LEVEL: 'warn',
    WORKER_LOCK_MS: TEST_WORKER_LOCK_MS,
    ...p.extra,
  };
}
