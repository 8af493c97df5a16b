import type { Credential } from '../domain/access.ts';
import type { EvmChain, Network } from '../domain/chains.ts';
import type { CctpSettings } from './cctp-settings.ts';
import type { RedisSettings } from './redis-settings.ts';
import type { JobsKept } from './jobs-kept.ts';
import type { SigningKeyReader } from './signing-key-reader.ts';

/** Secrets are held as `Secret` so that no accidental `String()`, JSON or log line shows them. */
export class Secret {
  readonly #value: string;
  constructor(value: string) {
    this.#value = value;
  }
  reveal(): string {
    return this.#value;
  }
  toString(): string {
    return '[secret]';
  }
  toJSON(): string {
    return '[secret]';
  }
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return '[secret]';
  }
}

export const NEW_RECIPIENT_POLICIES = ['allow', 'hold', 'reject'] as const;
export type NewRecipientPolicy = (typeof NEW_RECIPIENT_POLICIES)[number];

/** Everything the product reads from the environment, parsed once and frozen (docs/configuration.md). */
export type Config = RedisSettings &
  CctpSettings & {
    readonly redisUrl: string;
    /** Whether REDIS_URL was set explicitly (the demo starts its own Redis otherwise). */
    readonly redisUrlSet: boolean;
    readonly allowVolatileRedis: boolean;
    readonly queuePrefix: string;
    readonly transferApiUrl: string | undefined;
    readonly transferApiKey: Secret | undefined;
    readonly network: Network;
    /**
     * The treasury owners' keys (0x-prefixed 32-byte hex), in the order given: EVM_PRIVATE_KEY
     * (comma-separated), EVM_PRIVATE_KEY_FILE (one per line) or EVM_KEYSTORE_FILE. Empty when none is
     * set, and in every process that does not sign (read only with `ConfigNeeds.keys`). Each key is an
     * owner with its own permit nonces per chain; the first is preferred when several could pay.
     */
    readonly evmPrivateKeys: readonly Secret[];
    /**
     * 64-byte secret key (solana-keygen layout: secret ‖ public), from SOLANA_KEYPAIR_FILE or
     * SOLANA_PRIVATE_KEY; read only with `ConfigNeeds.keys`.
     */
    readonly solanaSecretKey: Uint8Array | undefined;
    /**
     * The treasury's EVM owners' public addresses (checksummed, in order) as known without Redis:
     * EVM_OWNER_ADDRESSES; else, where keys are read, the keys' addresses; else the keystores' public
     * `address` fields. Empty when none of these tells (src/config/public-addresses.ts).
     */
    readonly evmOwnerAddresses: readonly string[];
    /** The treasury's Solana address: SOLANA_ADDRESS; else, where keys are read, the key's. */
    readonly solanaAddress: string | undefined;
    readonly permitSpender: string | undefined;
    readonly permitSpenderByChain: Readonly<Partial<Record<EvmChain, string>>>;
    readonly evmRpcUrl: Readonly<Partial<Record<EvmChain, string>>>;
    readonly solanaRpcUrl: string | undefined;
    /** Fee guard: reject when fee > amount × bps / 10 000. */
    readonly maxFeeBps: bigint;
    /** micro-USDC, or undefined for no cap. */
    readonly maxFeeUsdc: bigint | undefined;
    readonly maxTransferUsdc: bigint | undefined;
    readonly maxBatchUsdc: bigint | undefined;
    readonly maxDailyUsdc: bigint | undefined;
    readonly approvalThresholdUsdc: bigint | undefined;
    /** Distinct approvers a held batch needs, none of them its submitter (docs/access.md "Four eyes"). */
    readonly approvalsRequired: number;
    /** AUDIT_LOG_FILE: every audit entry is also appended there, hash-chained (docs/audit.md). */
    readonly auditLogFile: string | undefined;
    /** USDC_BATCH_OPERATOR: who the command line acts as (`cli:<name>`); undefined: the OS user. */
    readonly operatorName: string | undefined;
    /** ACCESS_FILE's path (docs/access.md); undefined: the three tokens name the credentials. */
    readonly accessFile: string | undefined;
    /**
     * The API's credentials, tokens as SHA-256 digests: ACCESS_FILE's (read only with
     * `ConfigNeeds.access`) or HOOK_TOKEN's, APPROVER_TOKEN's and METRICS_TOKEN's.
     */
    readonly credentials: readonly Credential[];
    /** What a row paying an address not in the address book gets: paid and flagged, the batch held, or refused. */
    readonly newRecipientPolicy: NewRecipientPolicy;
    /** micro-USDC: under `allow`, what a new recipient is paid across unfinished batches before a hold. */
    readonly newRecipientMaxUsdc: bigint | undefined;
    /** SCREENING_LISTS: the sanctions lists' files (docs/screening.md); empty: none. */
    readonly screeningLists: readonly string[];
    /** SCREENING_MAX_AGE in ms: a list issued longer ago makes screening stale (nothing is signed). */
    readonly screeningMaxAgeMs: number;
    /** SCREENING_ONCHAIN: read USDC's blacklist and frozen accounts on chain before signing. */
    readonly screeningOnchain: boolean;
    readonly callbackAllowedHosts: readonly string[];
    readonly solanaAllowedDestinations: readonly string[] | undefined;
    readonly workerConcurrency: number;
    /** Finished transfer jobs BullMQ keeps per queue (TRANSFER_JOBS_KEPT). */
    readonly transferJobsKept: JobsKept;
    /** How often a worker reads the treasury's balances for `/metrics` (ms); 0: never. */
    readonly treasuryBalanceIntervalMs: number;
    /** Requests per second to the service across all workers; undefined for no limit. */
    readonly apiRateLimit: number | undefined;
    /** The address `serve` listens on (default loopback only). */
    readonly httpHost: string;
    readonly httpPort: number;
    /** Slow and idle clients (docs/http-api.md): time limits, milliseconds, and the connection cap. */
    readonly httpHeadersTimeoutMs: number;
    readonly httpRequestTimeoutMs: number;
    readonly httpIdleTimeoutMs: number;
    readonly httpMaxConnections: number;
    /** Failed authentications of one address within a minute that get it 429 for a minute; 0: never. */
    readonly httpAuthFailureLimit: number;
    /** HTTP_TRUSTED_PROXIES: addresses, CIDRs (or loopback/linklocal/uniquelocal) whose X-Forwarded-For names the client. */
    readonly httpTrustedProxies: readonly string[];
    readonly hookHmacSecret: Secret | undefined;
    readonly logLevel: string;
    /** `LOG_FORMAT`; null (unset): pretty when stderr is a terminal, JSON otherwise. */
    readonly logFormat: 'json' | 'pretty' | null;
    /** Permit deadline, seconds from signing. */
    readonly permitDeadlineSeconds: number;
    /** Per-request timeouts to the service, milliseconds. */
    readonly serviceConnectTimeoutMs: number;
    readonly serviceResponseTimeoutMs: number;
    /**
     * `WORKER_LOCK_MS`: how long a dead worker's holds outlive it (a transfer's locks; twice it an
     * owner's nonce lease, four times a CCTP lease: domain/hold-times.ts), milliseconds.
     */
    readonly workerLockMs: number;
    /**
     * How long a permit refused on its first send waits for the chain (re-reading nonces(owner) at
     * the RPC's head block) before the refusal is final, milliseconds.
     */
    readonly nonceSettleWindowMs: number;
  };

/** What a command needs: `loadConfig` reports missing variables only for these. */
export type ConfigNeeds = {
  readonly service?: boolean;
  readonly evmKey?: boolean;
  readonly solanaKey?: boolean;
  /**
   * At least one signing key (the worker): the EVM key (with a permit spender) lets it take
   * EVM-source rows, the Solana key SOLANA-source rows. It consumes only the source-chain queues it
   * has keys for (`workerSourceChains`), so rows of another source wait `queued` for a worker that
   * has their key. No key at all is an error naming both variables.
   */
  readonly signingKey?: boolean;
  /** `serve`: ACCESS_FILE is read and checked, and at least one credential is required. */
  readonly access?: boolean;
  /**
   * Only a process that signs gives this (`worker`, `demo`: src/signing/evm/keystore.ts): with it
   * the key settings are read and keystores opened; without it they are ignored altogether.
   */
  readonly keys?: SigningKeyReader;
};
