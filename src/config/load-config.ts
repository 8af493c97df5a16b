import { isIP } from 'node:net';
import { EVM_CHAINS, type EvmChain, type Network } from '../domain/chains.ts';
import { checkSolanaAddress } from '../domain/addresses.ts';
import { parseAllowedHost } from '../domain/callback-url.ts';
import { isHostName } from '../domain/host-name.ts';
import { ConfigError, type ConfigProblem } from '../domain/errors.ts';
import {
  NEW_RECIPIENT_POLICIES,
  Secret,
  type Config,
  type ConfigNeeds,
  type NewRecipientPolicy,
} from './config.ts';
import { workerLockProblem } from '../domain/hold-times.ts';
import { DEFAULTS } from './defaults.ts';
import { JOBS_KEPT_FORM, parseJobsKept, type JobsKept } from './jobs-kept.ts';
import { createEnvReader, type Env, type EnvReader, type Problem } from './env-reader.ts';
import { checkSecretLength, readAccessSettings } from './access-settings.ts';
import { readTreasuryKeys } from './public-addresses.ts';
import { readRedisSettings } from './redis-settings.ts';
import { readCctpSettings } from './cctp-settings.ts';
import { readScreeningSettings } from './screening-settings.ts';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function readNetwork(r: EnvReader, problem: Problem): Network {
  const text = (r.str('NETWORK') ?? DEFAULTS.NETWORK).toLowerCase();
  if (text === 'testnet' || text === 'mainnet') return text;
  problem('NETWORK', 'must be testnet or mainnet');
  return 'testnet';
}

/** Per-chain settings: `PERMIT_SPENDER_<CHAIN>` and `EVM_RPC_URL_<CHAIN>`. */
function readPerChain(r: EnvReader): {
  permitSpenderByChain: Partial<Record<EvmChain, string>>;
  evmRpcUrl: Partial<Record<EvmChain, string>>;
} {
  const permitSpenderByChain: Partial<Record<EvmChain, string>> = {};
  const evmRpcUrl: Partial<Record<EvmChain, string>> = {};
  for (const chain of EVM_CHAINS) {
    const s = r.address(`PERMIT_SPENDER_${chain}`);
    if (s) permitSpenderByChain[chain] = s;
    const u = r.url(`EVM_RPC_URL_${chain}`, ['http:', 'https:']);
    if (u) evmRpcUrl[chain] = u;
  }
  return { permitSpenderByChain, evmRpcUrl };
}

export { MIN_SECRET_LENGTH } from './access-settings.ts';

/** `host` or `host:port` entries, lower-cased; anything else (a URL, a path, a bad port) is a problem. */
function readCallbackAllowedHosts(r: EnvReader, problem: Problem): readonly string[] {
  const entries = (r.list('CALLBACK_ALLOWED_HOSTS') ?? []).map((h) => h.toLowerCase());
  for (const entry of entries) {
    if (parseAllowedHost(entry) === undefined) {
      problem('CALLBACK_ALLOWED_HOSTS', `"${entry.slice(0, 80)}" is not a host or host:port`);
    }
  }
  return Object.freeze(entries);
}

/**
 * `NEW_RECIPIENT_POLICY` and `NEW_RECIPIENT_MAX_USDC`. Either one makes the address book a control,
 * which needs an approver credential (access-settings.ts): whoever submits batches must not be the
 * one who vouches for their recipients.
 */
function readNewRecipients(
  r: EnvReader,
  problem: Problem,
): { newRecipientPolicy: NewRecipientPolicy; newRecipientMaxUsdc: bigint | undefined } {
  const text = (r.str('NEW_RECIPIENT_POLICY') ?? DEFAULTS.NEW_RECIPIENT_POLICY).toLowerCase();
  let policy: NewRecipientPolicy = DEFAULTS.NEW_RECIPIENT_POLICY;
  if ((NEW_RECIPIENT_POLICIES as readonly string[]).includes(text)) policy = text as NewRecipientPolicy;
  else problem('NEW_RECIPIENT_POLICY', `must be one of ${NEW_RECIPIENT_POLICIES.join(', ')}`);
  return { newRecipientPolicy: policy, newRecipientMaxUsdc: r.usdc('NEW_RECIPIENT_MAX_USDC') };
}

/** The name the command line acts as: `cli:<name>` in the audit, `submitted_by`, approvals. */
export const OPERATOR_NAME_PATTERN = /^[A-Za-z0-9_.@-]{1,64}$/;

function readOperatorName(r: EnvReader, problem: Problem): string | undefined {
  const name = r.str('USDC_BATCH_OPERATOR');
  if (name !== undefined && !OPERATOR_NAME_PATTERN.test(name)) {
    problem('USDC_BATCH_OPERATOR', 'must be 1-64 characters of A-Z, a-z, 0-9, "_", ".", "@" or "-"');
    return undefined;
  }
  return name;
}

function readSolanaAllowedDestinations(r: EnvReader, problem: Problem): string[] | undefined {
  const list = r.list('SOLANA_ALLOWED_DESTINATIONS');
  for (const d of list ?? []) {
    const c = checkSolanaAddress(d);
    if (!c.ok) problem('SOLANA_ALLOWED_DESTINATIONS', `"${d.slice(0, 50)}" ${c.reason}`);
  }
  return list;
}

/** The HTTP API's address, and the limits that keep slow or idle clients from holding it. */
function readHttpServer(
  r: EnvReader,
  problem: Problem,
): Pick<
  Config,
  | 'httpHost'
  | 'httpPort'
  | 'httpHeadersTimeoutMs'
  | 'httpRequestTimeoutMs'
  | 'httpIdleTimeoutMs'
  | 'httpMaxConnections'
  | 'httpAuthFailureLimit'
  | 'httpTrustedProxies'
> {
  const host = r.str('HTTP_HOST') ?? DEFAULTS.HTTP_HOST;
  if (isIP(host) === 0 && !isHostName(host)) {
    problem('HTTP_HOST', `must be an IP address or a host name (got "${host.slice(0, 60)}")`);
  }
  const headers = r.int('HTTP_HEADERS_TIMEOUT_MS', DEFAULTS.HTTP_HEADERS_TIMEOUT_MS, 100, 600_000);
  const request = r.int('HTTP_REQUEST_TIMEOUT_MS', DEFAULTS.HTTP_REQUEST_TIMEOUT_MS, 100, 3_600_000);
  // Node refuses a headers timeout above the request timeout: the headers are part of the request.
  if (headers > request) {
    problem('HTTP_HEADERS_TIMEOUT_MS', `must not exceed HTTP_REQUEST_TIMEOUT_MS (${request})`);
  }
  return {
    httpHost: host,
    httpPort: r.int('HTTP_PORT', DEFAULTS.HTTP_PORT, 0, 65_535),
    httpHeadersTimeoutMs: headers,
    httpRequestTimeoutMs: request,
    httpIdleTimeoutMs: r.int('HTTP_IDLE_TIMEOUT_MS', DEFAULTS.HTTP_IDLE_TIMEOUT_MS, 100, 600_000),
    httpMaxConnections: r.int('HTTP_MAX_CONNECTIONS', DEFAULTS.HTTP_MAX_CONNECTIONS, 1, 1_000_000),
    httpAuthFailureLimit: r.int('HTTP_AUTH_FAILURE_LIMIT', DEFAULTS.HTTP_AUTH_FAILURE_LIMIT, 0, 1_000_000),
    httpTrustedProxies: readTrustedProxies(r, problem),
  };
}

/** `LOG_FORMAT`: `json` or `pretty`; unset, pretty on a terminal and JSON elsewhere (log/logger.ts). */
function readLogFormat(r: EnvReader, problem: Problem): 'json' | 'pretty' | null {
  const format = r.str('LOG_FORMAT')?.toLowerCase();
  if (format === undefined) return null;
  if (format === 'json' || format === 'pretty') return format;
  problem('LOG_FORMAT', 'must be json or pretty (unset: pretty on a terminal, json elsewhere)');
  return null;
}

/** proxy-addr's names for address ranges (Fastify's trustProxy), besides addresses and CIDRs. */
const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/** HTTP_TRUSTED_PROXIES: comma-separated IP addresses, CIDRs (`10.0.0.0/8`, `fd00::/8`) or range names. */
function readTrustedProxies(r: EnvReader, problem: Problem): readonly string[] {
  const entries = r.list('HTTP_TRUSTED_PROXIES') ?? [];
  for (const entry of entries) {
    const [address = '', bits, extra] = entry.split('/');
    const family = isIP(address);
    const max = family === 6 ? 128 : 32;
    const ok =
      PROXY_RANGE_NAMES.includes(entry) ||
      (family !== 0 &&
        extra === undefined &&
        (bits === undefined || (/^[0-9]{1,3}$/.test(bits) && Number(bits) <= max)));
    if (!ok) {
      problem(
        'HTTP_TRUSTED_PROXIES',
        `"${entry.slice(0, 60)}" is not an IP address, a CIDR (10.0.0.0/8) or one of ${PROXY_RANGE_NAMES.join(', ')}`,
      );
    }
  }
  return Object.freeze(entries);
}

function readLogLevel(r: EnvReader, problem: Problem): string {
  const level = (r.str('LOG_LEVEL') ?? DEFAULTS.LOG_LEVEL).toLowerCase();
  if (!LOG_LEVELS.includes(level)) problem('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}`);
  return level;
}

/** TRANSFER_JOBS_KEPT, or its default when unset or wrong (a wrong one is a problem naming it). */
function readJobsKept(r: EnvReader, problem: Problem): JobsKept {
  const fallback = parseJobsKept(DEFAULTS.TRANSFER_JOBS_KEPT) as JobsKept;
  const text = r.str('TRANSFER_JOBS_KEPT');
  if (text === undefined) return fallback;
  const kept = parseJobsKept(text);
  if (!kept) problem('TRANSFER_JOBS_KEPT', JOBS_KEPT_FORM);
  return kept ?? fallback;
}

/** A Redis URL's path is its database number, if anything (ioredis would SELECT any other text). */
function redisDatabaseProblem(u: URL): string | undefined {
  return /^(\/[0-9]*)?$/.test(u.pathname)
    ? undefined
    : 'must end in a database number, if anything (redis://host:6379/0)';
}

/**
 * Whether every key `${prefix}:…` hashes on the prefix's tag (Redis Cluster): the prefix holds a
 * `{` followed by a non-empty tag and `}`, with no `{` before it.
 */
export function isHashTagPrefix(prefix: string): boolean {
  return /^[^{]*\{[^}]+\}/.test(prefix);
}

/**
 * Parses and validates the whole configuration at once; every problem is collected and thrown
 * together as a ConfigError naming its variable. Secret values never appear in a message.
 */
export function loadConfig(env: Env, needs: ConfigNeeds = {}): Config {
  const problems: ConfigProblem[] = [];
  const problem: Problem = (variable, message, missing) =>
    problems.push(missing ? { variable, message, missing } : { variable, message });
  const r = createEnvReader(env, problem);

  const redisUrl = r.url('REDIS_URL', ['redis:', 'rediss:'], redisDatabaseProblem) ?? DEFAULTS.REDIS_URL;
  const queuePrefix = r.str('QUEUE_PREFIX') ?? DEFAULTS.QUEUE_PREFIX;
  if (queuePrefix.includes(':') && !/^\{[^}]+\}$/.test(queuePrefix))
    problem('QUEUE_PREFIX', 'must not contain ":"');

  const transferApiUrl = r.url('TRANSFER_API_URL', ['http:', 'https:']);
  const apiKeyText = r.str('TRANSFER_API_KEY');
  if (apiKeyText !== undefined && !/^sk_\S{1,500}$/.test(apiKeyText)) {
    problem('TRANSFER_API_KEY', 'must be the service key, starting with "sk_"');
  }
  const { permitSpenderByChain, evmRpcUrl } = readPerChain(r);
  const apiRateLimit =
    r.str('API_RATE_LIMIT') === undefined ? undefined : r.int('API_RATE_LIMIT', 0, 1, 100_000);

  const network = readNetwork(r, problem);
  const book = readNewRecipients(r, problem);
  checkSecretLength(r, problem, 'HOOK_HMAC_SECRET');
  const redisSettings = readRedisSettings(r, problem);
  if (redisSettings.redisClusterNodes) checkClusterPlace(problem, queuePrefix, redisUrl);

  const serviceTimeouts = readServiceTimeouts(r);
  const config: Config = {
    redisUrl,
    redisUrlSet: r.str('REDIS_URL') !== undefined,
    ...redisSettings,
    allowVolatileRedis: r.bool('ALLOW_VOLATILE_REDIS'),
    queuePrefix,
    transferApiUrl,
    transferApiKey: apiKeyText !== undefined ? new Secret(apiKeyText) : undefined,
    network,
    ...readCctpSettings(r, problem, network),
    ...readTreasuryKeys(r, problem, needs),
    permitSpender: r.address('PERMIT_SPENDER'),
    permitSpenderByChain: Object.freeze(permitSpenderByChain),
    evmRpcUrl: Object.freeze(evmRpcUrl),
    solanaRpcUrl: r.url('SOLANA_RPC_URL', ['http:', 'https:']),
    maxFeeBps: BigInt(r.int('MAX_FEE_BPS', DEFAULTS.MAX_FEE_BPS, 0, 10_000)),
    // 0 is a meaningful fee cap (only free transfers); 0 for the spend limits would stop everything.
    maxFeeUsdc: r.usdc('MAX_FEE_USDC', { allowZero: true }),
    maxTransferUsdc: r.usdc('MAX_TRANSFER_USDC'),
    maxBatchUsdc: r.usdc('MAX_BATCH_USDC'),
    maxDailyUsdc: r.usdc('MAX_DAILY_USDC'),
    approvalThresholdUsdc: r.usdc('APPROVAL_THRESHOLD_USDC'),
    approvalsRequired: r.int('APPROVALS_REQUIRED', DEFAULTS.APPROVALS_REQUIRED, 1, 10),
    operatorName: readOperatorName(r, problem),
    auditLogFile: r.str('AUDIT_LOG_FILE'),
    ...readAccessSettings(r, problem, { readFile: needs.access === true, book }),
    ...book,
    ...readScreeningSettings(r, problem),
    callbackAllowedHosts: readCallbackAllowedHosts(r, problem),
    solanaAllowedDestinations: freezeIfSet(readSolanaAllowedDestinations(r, problem)),
    workerConcurrency: r.int('WORKER_CONCURRENCY', DEFAULTS.WORKER_CONCURRENCY, 1, 1024),
    transferJobsKept: readJobsKept(r, problem),
    treasuryBalanceIntervalMs: r.int(
      'TREASURY_BALANCE_INTERVAL_MS',
      DEFAULTS.TREASURY_BALANCE_INTERVAL_MS,
      0,
      86_400_000,
    ),
    apiRateLimit,
    ...readHttpServer(r, problem),
    hookHmacSecret:
      r.str('HOOK_HMAC_SECRET') !== undefined ? new Secret(r.str('HOOK_HMAC_SECRET') as string) : undefined,
    logLevel: readLogLevel(r, problem),
    logFormat: readLogFormat(r, problem),
    permitDeadlineSeconds: r.int(
      'PERMIT_DEADLINE_SECONDS',
      DEFAULTS.PERMIT_DEADLINE_SECONDS,
      60,
      7 * 24 * 3600,
    ),
    ...serviceTimeouts,
    workerLockMs: readWorkerLock(r, problem, serviceTimeouts),
    // At most 2 minutes: the window must fit in the 3-minute budget of transient failures.
    nonceSettleWindowMs: r.int('NONCE_SETTLE_WINDOW_MS', DEFAULTS.NONCE_SETTLE_WINDOW_MS, 0, 120_000),
  };

  reportMissing(config, needs, r, problem, new Set(problems.map((p) => p.variable)));
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

/** With REDIS_CLUSTER_NODES: every key in one slot (a hash-tag prefix), and no database but 0. */
function checkClusterPlace(problem: Problem, queuePrefix: string, redisUrl: string): void {
  if (!isHashTagPrefix(queuePrefix)) {
    problem(
      'QUEUE_PREFIX',
      'must be a hash tag such as {usdc} with REDIS_CLUSTER_NODES: every key of the project must hash to one slot of the cluster',
    );
  }
  if (!/^\/?0?$/.test(new URL(redisUrl).pathname)) {
    problem(
      'REDIS_URL',
      'must not name a database with REDIS_CLUSTER_NODES: a Redis Cluster has only database 0',
    );
  }
}

/** How long the service client waits to connect and for an answer. */
function readServiceTimeouts(
  r: EnvReader,
): Pick<Config, 'serviceConnectTimeoutMs' | 'serviceResponseTimeoutMs'> {
  return {
    serviceConnectTimeoutMs: r.int(
      'SERVICE_CONNECT_TIMEOUT_MS',
      DEFAULTS.SERVICE_CONNECT_TIMEOUT_MS,
      100,
      60_000,
    ),
    serviceResponseTimeoutMs: r.int(
      'SERVICE_RESPONSE_TIMEOUT_MS',
      DEFAULTS.SERVICE_RESPONSE_TIMEOUT_MS,
      100,
      120_000,
    ),
  };
}

/**
 * `WORKER_LOCK_MS`: how long a dead worker's holds outlive it (domain/hold-times.ts), at most 10
 * minutes, and long enough for the nonce lease to outlast a service call.
 */
function readWorkerLock(
  r: EnvReader,
  problem: Problem,
  service: Pick<Config, 'serviceConnectTimeoutMs' | 'serviceResponseTimeoutMs'>,
): number {
  const ms = r.int('WORKER_LOCK_MS', DEFAULTS.WORKER_LOCK_MS, 1_000, 600_000);
  const why = workerLockProblem(ms, {
    connectTimeoutMs: service.serviceConnectTimeoutMs,
    responseTimeoutMs: service.serviceResponseTimeoutMs,
  });
  if (why) problem('WORKER_LOCK_MS', why);
  return ms;
}

function freezeIfSet<T>(list: T[] | undefined): readonly T[] | undefined {
  return list && Object.freeze(list);
}

/**
 * What this command needs, reported only when missing (and not already reported as malformed:
 * `reported` holds the variables with a problem so far).
 */
function reportMissing(
  config: Config,
  needs: ConfigNeeds,
  r: EnvReader,
  problem: Problem,
  reported: ReadonlySet<string>,
): void {
  const need = (name: string, present: unknown, why: string) => {
    if (present === undefined && !reported.has(name)) problem(name, `is required ${why}`, true);
  };
  const anySpender =
    config.permitSpender !== undefined || Object.keys(config.permitSpenderByChain).length > 0;
  if (needs.service) {
    need('TRANSFER_API_URL', config.transferApiUrl, 'to reach the transfer service');
    need('TRANSFER_API_KEY', config.transferApiKey, 'to reach the transfer service');
  }
  const evmKeyReported = ['EVM_PRIVATE_KEY_FILE', 'EVM_KEYSTORE_FILE', 'EVM_KEYSTORE_PASSWORD_FILE'].some(
    (v) => reported.has(v),
  );
  if (needs.evmKey && !evmKeyReported) {
    need(
      'EVM_PRIVATE_KEY',
      config.evmPrivateKeys[0],
      'to sign permits for EVM-source transfers (or set EVM_PRIVATE_KEY_FILE or EVM_KEYSTORE_FILE)',
    );
  }
  if (needs.evmKey && !anySpender) {
    need('PERMIT_SPENDER', undefined, 'to sign permits for EVM-source transfers (or PERMIT_SPENDER_<CHAIN>)');
  }
  if (needs.solanaKey && !reported.has('SOLANA_KEYPAIR_FILE') && !reported.has('SOLANA_PRIVATE_KEY')) {
    need(
      'SOLANA_KEYPAIR_FILE',
      config.solanaSecretKey,
      'to sign Solana-source transfers (or set SOLANA_PRIVATE_KEY)',
    );
  }
  if (needs.signingKey) {
    const evmGiven = ['EVM_PRIVATE_KEY', 'EVM_PRIVATE_KEY_FILE', 'EVM_KEYSTORE_FILE'].some(
      (v) => r.str(v) !== undefined,
    );
    const solanaGiven =
      r.str('SOLANA_KEYPAIR_FILE') !== undefined || r.str('SOLANA_PRIVATE_KEY') !== undefined;
    if (!evmGiven && !solanaGiven) {
      problem(
        'EVM_PRIVATE_KEY / SOLANA_KEYPAIR_FILE',
        'a worker needs at least one signing key: EVM_PRIVATE_KEY (or EVM_PRIVATE_KEY_FILE, EVM_KEYSTORE_FILE) for ' +
          'EVM-source rows, SOLANA_KEYPAIR_FILE (or SOLANA_PRIVATE_KEY) for SOLANA-source rows',
        true,
      );
    }
    // Checked once the key itself is valid: a malformed key is the problem to fix first, and the
    // spender only matters for a key that can sign.
    if (config.evmPrivateKeys.length > 0 && !anySpender) {
      need(
        'PERMIT_SPENDER',
        undefined,
        'with EVM_PRIVATE_KEY: permits authorise this spender (or set PERMIT_SPENDER_<CHAIN>)',
      );
    }
  }
}

/** The spender a permit on `chain` authorises. */
export function spenderFor(config: Config, chain: EvmChain): string | undefined {
  return config.permitSpenderByChain[chain] ?? config.permitSpender;
}
