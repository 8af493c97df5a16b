import { createPrivateKey, createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { parse as parseDotenv } from 'dotenv';
import { EVM_CHAINS, type EvmChain, type Network } from '../domain/chains.ts';
import { checkEvmAddress, checkSolanaAddress } from '../domain/addresses.ts';
import { decodeBase58 } from '../domain/base58.ts';
import { parseAllowedHost } from '../domain/callback-url.ts';
import { isHostName } from '../domain/host-name.ts';
import { ConfigError, type ConfigProblem } from '../domain/errors.ts';
import { tryParseUsdc } from '../domain/money.ts';
import {
  NEW_RECIPIENT_POLICIES,
  Secret,
  type Config,
  type ConfigNeeds,
  type NewRecipientPolicy,
} from './config.ts';
import { readEvmKeystores } from './evm-keystore.ts';
import { warnIfKeyFileExposed } from './key-file-mode.ts';
import { DEFAULTS } from './defaults.ts';

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Reads `.env` from `cwd` (when present) under the process environment: variables already set in
 * the environment win, as dotenv does.
 */
export function readEnv(processEnv: Env = process.env, cwd: string = process.cwd()): Env {
  let fromFile: Record<string, string> = {};
  try {
    fromFile = parseDotenv(readFileSync(`${cwd}/.env`));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  return { ...fromFile, ...processEnv };
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

// secp256k1's group order: a private key must be in [1, n - 1].
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
// PKCS#8 DER header of an Ed25519 private key, followed by its 32-byte seed.
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/**
 * The Solana secret key stays a Uint8Array (what the signing layer takes), but prints like a
 * Secret: `JSON.stringify`, `util.inspect` and loggers show "[secret]", never the bytes.
 */
function hiddenBytes(bytes: Uint8Array): Uint8Array {
  const hide = () => '[secret]';
  Object.defineProperty(bytes, 'toJSON', { value: hide });
  Object.defineProperty(bytes, Symbol.for('nodejs.util.inspect.custom'), { value: hide });
  return bytes;
}

/**
 * A solana-keygen secret key is seed ‖ public key. A mismatched pair (two keys pasted together, a
 * truncated copy) would sign as another address than the one we report, so it is refused here.
 */
function isConsistentSolanaKeypair(bytes: Uint8Array): boolean {
  try {
    const key = createPrivateKey({
      key: Buffer.concat([ED25519_PKCS8_PREFIX, bytes.subarray(0, 32)]),
      format: 'der',
      type: 'pkcs8',
    });
    const spki = createPublicKey(key).export({ format: 'der', type: 'spki' });
    return Buffer.from(spki.subarray(spki.length - 32)).equals(Buffer.from(bytes.subarray(32, 64)));
  } catch {
    return false;
  }
}

/** Records a problem with a variable; `missing` when a required one is not set at all. */
type Problem = (variable: string, message: string, missing?: boolean) => void;

/** Typed reads of the environment; each malformed value is reported (as a problem) and ignored. */
export type EnvReader = ReturnType<typeof createEnvReader>;

function createEnvReader(env: Env, problem: Problem) {
  const str = (name: string): string | undefined => {
    const v = env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };
  return {
    str,
    url(name: string, protocols: string[]): string | undefined {
      const v = str(name);
      if (v === undefined) return undefined;
      try {
        const u = new URL(v);
        if (!protocols.includes(u.protocol)) {
          problem(name, `must be a ${protocols.join(' or ')} URL`);
          return undefined;
        }
        return v.replace(/\/+$/, '');
      } catch {
        problem(name, 'is not a valid URL');
        return undefined;
      }
    },
    int(name: string, def: number, min: number, max: number): number {
      const v = str(name);
      if (v === undefined) return def;
      if (!/^-?[0-9]+$/.test(v) || Number(v) < min || Number(v) > max) {
        problem(name, `must be a whole number from ${min} to ${max} (got "${v.slice(0, 20)}")`);
        return def;
      }
      return Number(v);
    },
    usdc(name: string, { allowZero = false } = {}): bigint | undefined {
      const v = str(name);
      if (v === undefined) return undefined;
      const r = tryParseUsdc(v, { allowZero });
      if (!r.ok) problem(name, `must be a USDC amount: it ${r.reason}`);
      return r.ok ? r.value : undefined;
    },
    bool(name: string): boolean {
      const v = str(name)?.toLowerCase();
      if (v === undefined) return false;
      if (['true', '1', 'yes'].includes(v)) return true;
      if (['false', '0', 'no'].includes(v)) return false;
      problem(name, 'must be true or false');
      return false;
    },
    /** The value of `name`, or the content of the file `fileName` names (never both). */
    secretText(name: string, fileName?: string): string | undefined {
      const direct = str(name);
      const file = fileName ? str(fileName) : undefined;
      if (direct !== undefined && file !== undefined) {
        problem(name, `set either ${name} or ${fileName}, not both`);
        return undefined;
      }
      if (file !== undefined) {
        try {
          return readFileSync(file, 'utf8').trim();
        } catch (err) {
          problem(fileName as string, `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
          return undefined;
        }
      }
      return direct;
    },
    address(name: string): string | undefined {
      const v = str(name);
      if (v === undefined) return undefined;
      const r = checkEvmAddress(v);
      if (!r.ok) problem(name, `${r.reason}`);
      return r.ok ? r.value : undefined;
    },
    list(name: string): string[] | undefined {
      return str(name)
        ?.split(',')
        .map((s) => s.trim())
        .filter(Boolean);
    },
  };
}

function readNetwork(r: EnvReader, problem: Problem): Network {
  const text = (r.str('NETWORK') ?? DEFAULTS.NETWORK).toLowerCase();
  if (text === 'testnet' || text === 'mainnet') return text;
  problem('NETWORK', 'must be testnet or mainnet');
  return 'testnet';
}

/**
 * The treasury's EVM keys: 32 bytes hex each, with or without 0x; several comma-separated in
 * EVM_PRIVATE_KEY, or one per line (commas allowed too) in EVM_PRIVATE_KEY_FILE. Only commas and
 * line breaks separate keys (a space inside a line is part of a malformed key, not a separator).
 * A problem names the key by its position, never by its text.
 */
function readEvmKeys(r: EnvReader, problem: Problem): readonly Secret[] {
  const keystores = r.list('EVM_KEYSTORE_FILE');
  if (keystores !== undefined && keystores.length > 0) {
    if (r.str('EVM_PRIVATE_KEY') !== undefined || r.str('EVM_PRIVATE_KEY_FILE') !== undefined) {
      problem(
        'EVM_KEYSTORE_FILE',
        'set exactly one of EVM_PRIVATE_KEY, EVM_PRIVATE_KEY_FILE, EVM_KEYSTORE_FILE',
      );
      return [];
    }
    const keys = readEvmKeystores(keystores, r.str('EVM_KEYSTORE_PASSWORD_FILE'), problem);
    return Object.freeze(keys.map((k) => new Secret(k)));
  }
  if (r.str('EVM_KEYSTORE_PASSWORD_FILE') !== undefined) {
    problem('EVM_KEYSTORE_PASSWORD_FILE', 'is set without EVM_KEYSTORE_FILE (the keystores it opens)');
  }
  const keyFile = r.str('EVM_PRIVATE_KEY_FILE');
  if (keyFile !== undefined) warnIfKeyFileExposed('EVM_PRIVATE_KEY_FILE', keyFile);
  const text = r.secretText('EVM_PRIVATE_KEY', 'EVM_PRIVATE_KEY_FILE');
  if (text === undefined) return [];
  const name = keyFile ? 'EVM_PRIVATE_KEY_FILE' : 'EVM_PRIVATE_KEY';
  const parts = text
    .split(/[,\r\n]+/)
    .map((s) => s.trim())
    .filter(Boolean);
  if (parts.length === 0) {
    problem(name, 'must hold a 32-byte hex private key');
    return [];
  }
  const keys: Secret[] = [];
  const seen = new Map<string, number>();
  parts.forEach((part, i) => {
    const which = parts.length > 1 ? `key ${i + 1} of ${parts.length}` : 'the key';
    const hex = (part.startsWith('0x') ? part.slice(2) : part).toLowerCase();
    if (!/^[0-9a-f]{64}$/.test(hex) || BigInt(`0x${hex}`) === 0n || BigInt(`0x${hex}`) >= SECP256K1_N) {
      problem(
        name,
        parts.length > 1
          ? `${which} is not a 32-byte hex private key`
          : 'must hold a 32-byte hex private key',
      );
      return;
    }
    const earlier = seen.get(hex);
    if (earlier !== undefined) {
      problem(name, `${which} repeats key ${earlier + 1} (each owner once)`);
      return;
    }
    seen.set(hex, i);
    keys.push(new Secret(`0x${hex}`));
  });
  return keys.length === parts.length ? Object.freeze(keys) : [];
}

/** The Solana key: a solana-keygen JSON file (64-byte array), or a base58 secret. */
function readSolanaKey(r: EnvReader, problem: Problem): Uint8Array | undefined {
  const file = r.str('SOLANA_KEYPAIR_FILE');
  const b58 = r.str('SOLANA_PRIVATE_KEY');
  if (file !== undefined && b58 !== undefined) {
    problem('SOLANA_PRIVATE_KEY', 'set either SOLANA_KEYPAIR_FILE or SOLANA_PRIVATE_KEY, not both');
    return undefined;
  }
  if (file !== undefined) return readSolanaKeypairFile(file, problem);
  if (b58 === undefined) return undefined;
  const bytes = decodeBase58(b58);
  if (bytes?.length !== 64) problem('SOLANA_PRIVATE_KEY', 'must be a base58 secret key of 64 bytes');
  else if (!isConsistentSolanaKeypair(bytes))
    problem('SOLANA_PRIVATE_KEY', 'is 64 bytes whose public half does not match the secret half');
  else return hiddenBytes(bytes);
  return undefined;
}

function readSolanaKeypairFile(file: string, problem: Problem): Uint8Array | undefined {
  warnIfKeyFileExposed('SOLANA_KEYPAIR_FILE', file);
  try {
    const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
    if (
      Array.isArray(parsed) &&
      parsed.length === 64 &&
      parsed.every((b) => Number.isInteger(b) && b >= 0 && b <= 255)
    ) {
      const bytes = Uint8Array.from(parsed as number[]);
      if (isConsistentSolanaKeypair(bytes)) return hiddenBytes(bytes);
      problem('SOLANA_KEYPAIR_FILE', 'holds 64 bytes whose public half does not match the secret half');
    } else problem('SOLANA_KEYPAIR_FILE', 'must hold a solana-keygen JSON array of 64 bytes');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    problem(
      'SOLANA_KEYPAIR_FILE',
      code ? `cannot be read (${code})` : 'must hold a solana-keygen JSON array of 64 bytes',
    );
  }
  return undefined;
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

/** The shortest token or secret accepted (README, HTTP API): a guessable one is refused at start. */
export const MIN_SECRET_LENGTH = 16;

/** A token or secret shorter than MIN_SECRET_LENGTH is a problem saying how to make a good one. */
function checkSecretLength(r: EnvReader, problem: Problem, name: string): void {
  const v = r.str(name);
  if (v !== undefined && v.length < MIN_SECRET_LENGTH) {
    problem(
      name,
      `is shorter than ${MIN_SECRET_LENGTH} characters: use a random one, e.g. \`openssl rand -hex 32\``,
    );
  }
}

/** The HTTP API's bearer tokens: the approver's must differ from the hook's. */
function readTokens(
  r: EnvReader,
  problem: Problem,
): { hookToken: Secret | undefined; approverToken: Secret | undefined } {
  const approver = r.str('APPROVER_TOKEN');
  const hook = r.str('HOOK_TOKEN');
  if (approver !== undefined && approver === hook) problem('APPROVER_TOKEN', 'must differ from HOOK_TOKEN');
  for (const [name, v] of [
    ['APPROVER_TOKEN', approver],
    ['HOOK_TOKEN', hook],
  ] as const) {
    if (v !== undefined && /\s/.test(v)) problem(name, 'must not contain spaces');
  }
  for (const name of ['APPROVER_TOKEN', 'HOOK_TOKEN', 'HOOK_HMAC_SECRET'])
    checkSecretLength(r, problem, name);
  return {
    hookToken: hook !== undefined ? new Secret(hook) : undefined,
    approverToken: approver !== undefined ? new Secret(approver) : undefined,
  };
}

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
 * `NEW_RECIPIENT_POLICY` and `NEW_RECIPIENT_MAX_USDC`. `hold` and `reject` need `APPROVER_TOKEN`:
 * whoever submits batches (the hook token) must not be the one who vouches for their recipients.
 */
function readNewRecipients(
  r: EnvReader,
  problem: Problem,
  approverToken: Secret | undefined,
): { newRecipientPolicy: NewRecipientPolicy; newRecipientMaxUsdc: bigint | undefined } {
  const text = (r.str('NEW_RECIPIENT_POLICY') ?? DEFAULTS.NEW_RECIPIENT_POLICY).toLowerCase();
  let policy: NewRecipientPolicy = DEFAULTS.NEW_RECIPIENT_POLICY;
  if ((NEW_RECIPIENT_POLICIES as readonly string[]).includes(text)) policy = text as NewRecipientPolicy;
  else problem('NEW_RECIPIENT_POLICY', `must be one of ${NEW_RECIPIENT_POLICIES.join(', ')}`);
  if (policy !== 'allow' && approverToken === undefined) {
    problem(
      'APPROVER_TOKEN',
      `is required with NEW_RECIPIENT_POLICY=${policy}: the address book is vouched for with the approver's token, not the hook's`,
    );
  }
  return { newRecipientPolicy: policy, newRecipientMaxUsdc: r.usdc('NEW_RECIPIENT_MAX_USDC') };
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
  };
}

function readLogLevel(r: EnvReader, problem: Problem): string {
  const level = (r.str('LOG_LEVEL') ?? DEFAULTS.LOG_LEVEL).toLowerCase();
  if (!LOG_LEVELS.includes(level)) problem('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}`);
  return level;
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

  const redisUrl = r.url('REDIS_URL', ['redis:', 'rediss:']) ?? DEFAULTS.REDIS_URL;
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

  const tokens = readTokens(r, problem);
  const config: Config = {
    redisUrl,
    redisUrlSet: r.str('REDIS_URL') !== undefined,
    allowVolatileRedis: r.bool('ALLOW_VOLATILE_REDIS'),
    queuePrefix,
    transferApiUrl,
    transferApiKey: apiKeyText !== undefined ? new Secret(apiKeyText) : undefined,
    network: readNetwork(r, problem),
    evmPrivateKeys: readEvmKeys(r, problem),
    solanaSecretKey: readSolanaKey(r, problem),
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
    ...tokens,
    ...readNewRecipients(r, problem, tokens.approverToken),
    callbackAllowedHosts: readCallbackAllowedHosts(r, problem),
    solanaAllowedDestinations: freezeIfSet(readSolanaAllowedDestinations(r, problem)),
    workerConcurrency: r.int('WORKER_CONCURRENCY', DEFAULTS.WORKER_CONCURRENCY, 1, 1024),
    treasuryBalanceIntervalMs: r.int('TREASURY_BALANCE_INTERVAL_MS', 60_000, 0, 86_400_000),
    apiRateLimit,
    ...readHttpServer(r, problem),
    hookHmacSecret:
      r.str('HOOK_HMAC_SECRET') !== undefined ? new Secret(r.str('HOOK_HMAC_SECRET') as string) : undefined,
    logLevel: readLogLevel(r, problem),
    permitDeadlineSeconds: r.int(
      'PERMIT_DEADLINE_SECONDS',
      DEFAULTS.PERMIT_DEADLINE_SECONDS,
      60,
      7 * 24 * 3600,
    ),
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
    // At most 2 minutes: the window must fit in the 3-minute budget of transient failures.
    nonceSettleWindowMs: r.int('NONCE_SETTLE_WINDOW_MS', DEFAULTS.NONCE_SETTLE_WINDOW_MS, 0, 120_000),
  };

  reportMissing(config, needs, r, problem, new Set(problems.map((p) => p.variable)));
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
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
  if (needs.hook) need('HOOK_TOKEN', config.hookToken, 'to authenticate HTTP requests');
}

/** The spender a permit on `chain` authorises. */
export function spenderFor(config: Config, chain: EvmChain): string | undefined {
  return config.permitSpenderByChain[chain] ?? config.permitSpender;
}
