import { EVM_CHAINS } from '../domain/chains.ts';
import { CIRCLE_ATTESTATION_API } from './cctp-settings.ts';
import { DEFAULTS } from './defaults.ts';

/*
 * Every variable the configuration reads, with its default and meaning, declared once: the
 * configuration reference (docs/configuration.md) is written from this table by
 * `npm run docs:config`, and test/unit/config-reference.test.ts fails when loadConfig reads a
 * variable that has no row here, when a row names a variable loadConfig does not read, when a
 * default shown here is not DEFAULTS', or when the committed reference is not what this table writes.
 * One object per row of the reference: a row added on one branch merges as one block.
 */

/** One row of the configuration reference. */
export type ConfigVariable = {
  /** The variables of the row; `<CHAIN>` stands for each EVM chain (`ETH`, `BASE`, `ARB`, `POLYGON`). */
  readonly names: readonly string[];
  /** The names are alternatives (set one of them), not settings that go together. */
  readonly either?: boolean;
  /** The default as the reference shows it: `shown(…)` where the code has one in DEFAULTS. */
  readonly default: string;
  /** What it does, in Markdown; links are relative to docs/. */
  readonly meaning: string;
  /**
   * Who reads it when loadConfig does not (e.g. a library that reads its own standard variables
   * from the environment): the test then does not look for it among loadConfig's reads.
   */
  readonly readElsewhere?: string;
};

/** DEFAULTS' values as the reference shows them: `` `5000` ``, comma-separated. */
export function shown(...keys: (keyof typeof DEFAULTS)[]): string {
  return keys.map((k) => `\`${String(DEFAULTS[k])}\``).join(', ');
}

/** The variables named by a row, `<CHAIN>` expanded to each EVM chain. */
export function expandedNames(row: ConfigVariable): string[] {
  return row.names.flatMap((n) =>
    n.includes('<CHAIN>') ? EVM_CHAINS.map((c) => n.replace('<CHAIN>', c)) : [n],
  );
}

/** The product's variables, in the order of docs/configuration.md. */
export const CONFIG_VARIABLES: readonly ConfigVariable[] = [
  {
    names: ['REDIS_URL'],
    default: shown('REDIS_URL'),
    meaning:
      'Redis (`redis://user:password@host:port/db`; `rediss://` for TLS; ' +
      '[security.md](security.md)). The worker refuses one that can lose acknowledged writes ' +
      '(`appendonly` off or `appendfsync` not `always`) unless `ALLOW_VOLATILE_REDIS=true`, and ' +
      'warns where `CONFIG` is disabled',
  },
  {
    names: ['ALLOW_VOLATILE_REDIS'],
    default: '`false`',
    meaning:
      '`true` lets the worker start on a Redis that can lose acknowledged writes (a throwaway one for ' +
      'tests): it is refused otherwise, because a write lost in a crash could mean a forgotten send',
  },
  {
    names: ['REDIS_SENTINELS', 'REDIS_SENTINEL_NAME'],
    default: '—',
    meaning:
      "instead of `REDIS_URL`'s host: `host:port,…` of the Redis Sentinels and the name of the " +
      'primary they watch; every connection of every process follows a failover by itself ' +
      "(`REDIS_URL`'s user, password, database and `rediss:` still apply)",
  },
  {
    names: ['REDIS_CLUSTER_NODES'],
    default: '—',
    meaning:
      "instead of `REDIS_URL`'s host: `host:port,…` seed nodes of a Redis Cluster (MemoryDB, " +
      'ElastiCache cluster mode, a self-run cluster); every connection of every process follows the ' +
      "cluster's slot map and its failovers (`REDIS_URL`'s user, password and `rediss:` still apply). " +
      '`QUEUE_PREFIX` must then be a hash tag such as `{usdc}`, or the start fails naming both; see ' +
      '[scaling.md](scaling.md#redis-deployments)',
  },
  {
    names: ['REDIS_SENTINEL_PASSWORD'],
    default: 'none',
    meaning:
      "the Sentinels' own password (`requirepass` in sentinel.conf), a secret never shown; the " +
      "primary's password stays in `REDIS_URL`. A Sentinel decides where `REDIS_URL`'s password " +
      'goes: trust it like Redis itself ([security.md](security.md#sentinels))',
  },
  {
    names: ['REDIS_REPLICA_ACKS', 'REDIS_REPLICA_ACK_TIMEOUT_MS'],
    default: shown('REDIS_REPLICA_ACKS', 'REDIS_REPLICA_ACK_TIMEOUT_MS'),
    meaning:
      'how many replicas must hold a write before money moves on it, and how long to wait for them: ' +
      '`auto` is the most replicas the current primary has had (0 on a Redis that never had one: no ' +
      '`WAIT` is sent); see [Replicated ' +
      'Redis](production.md#replicated-redis-sentinel-managed-services)',
  },
  {
    names: ['QUEUE_PREFIX'],
    default: shown('QUEUE_PREFIX'),
    meaning: 'prefix of every key; a hash tag such as `{usdc}` with `REDIS_CLUSTER_NODES` (required)',
  },
  {
    names: ['TRANSFER_API_URL', 'TRANSFER_API_KEY'],
    default: '—',
    meaning:
      'the service and its `sk_…` key (worker, `--dry-run`). A wrong key is found before any row ' +
      'fails: the worker asks for one estimate of 0.000001 USDC at start and exits 2 naming ' +
      '`TRANSFER_API_KEY` when the service answers 401 or 403 (a service that does not answer then ' +
      'is logged, and the worker goes on); `enqueue --dry-run` stops at the first such refusal with ' +
      'one line, exit 2',
  },
  {
    names: ['NETWORK'],
    default: shown('NETWORK'),
    meaning: '`testnet` or `mainnet`: chain ids, USDC contracts, Solana mint',
  },
  {
    names: ['EVM_PRIVATE_KEY', 'EVM_PRIVATE_KEY_FILE'],
    either: true,
    default: '—',
    meaning:
      'the treasury key that signs permits (EVM-source rows) — or several: comma-separated in the ' +
      'variable, one per line in the file (commas too). Each key is a treasury **owner** with its ' +
      'own permit nonces per chain; rows are spread over the owners whose USDC balance covers them ' +
      '(see [Several treasury owners](scaling.md#several-treasury-owners)). A key given twice or ' +
      'malformed is refused, named by its position (`key 2 of 3`), never echoed',
  },
  {
    names: ['EVM_KEYSTORE_FILE', 'EVM_KEYSTORE_PASSWORD_FILE'],
    default: '—',
    meaning:
      'instead of a raw key: Ethereum V3 keystore files (scrypt or pbkdf2, as `cast wallet`, geth ' +
      'and ethers write them), comma-separated, each an owner as above, and a file whose first line ' +
      'is their password. Exactly one of `EVM_PRIVATE_KEY`, `EVM_PRIVATE_KEY_FILE`, ' +
      '`EVM_KEYSTORE_FILE`. A wrong password or a damaged file is a configuration error naming the ' +
      'file (exit 2), never the password (see [Keys: raw, file, keystore](production.md#keys-raw-file-keystore))',
  },
  {
    names: ['SOLANA_KEYPAIR_FILE', 'SOLANA_PRIVATE_KEY'],
    either: true,
    default: '—',
    meaning:
      'solana-keygen JSON or base58 secret (SOLANA-source rows); a key file the group or others may ' +
      "read draws a warning, as ssh's does (`chmod 600`)",
  },
  {
    names: ['EVM_OWNER_ADDRESSES', 'SOLANA_ADDRESS'],
    default: '—',
    meaning:
      "the treasury's public addresses (EVM owners comma-separated, in the keys' order), for every " +
      "process that does not sign. Optional: without them those processes take the keystores' " +
      'public `address` field (read without the password) or what the running workers last ' +
      'published to Redis. The worker checks them against its keys ([keys stay in the ' +
      'worker](keys.md))',
  },
  {
    names: ['PERMIT_SPENDER', 'PERMIT_SPENDER_<CHAIN>'],
    default: '—',
    meaning: 'the address a permit authorises',
  },
  {
    names: ['EVM_RPC_URL_<CHAIN>'],
    default: '—',
    meaning: 'JSON-RPC for `nonces(owner)`, `name()`, `version()`, `balanceOf`',
  },
  {
    names: ['SOLANA_RPC_URL'],
    default: '—',
    meaning: 'Solana balance for `--dry-run` and `wallets`',
  },
  {
    names: ['TRANSFER_VIA'],
    default: shown('TRANSFER_VIA'),
    meaning:
      'the road a batch takes when it names none: `service` (the transfer service), `cctp` or ' +
      "`cctp-fast` (Circle's CCTP v2 directly, Standard or Fast: [cctp.md](cctp.md))",
  },
  {
    names: ['CCTP_API_URL'],
    default: `\`${CIRCLE_ATTESTATION_API.mainnet}\` on \`mainnet\`, \`${CIRCLE_ATTESTATION_API.testnet}\` on \`testnet\``,
    meaning:
      "Circle's attestation API for the `cctp` roads; the sandbox serves one at `<sandbox>/cctp` " +
      '(`sandbox --write-env` sets it)',
  },
  {
    names: ['CCTP_TOKEN_MESSENGER_<CHAIN>', 'CCTP_MESSAGE_TRANSMITTER_<CHAIN>', 'USDC_ADDRESS_<CHAIN>'],
    default: "Circle's published addresses for `NETWORK`",
    meaning:
      'the CCTP v2 contracts (TokenMessengerV2, MessageTransmitterV2) and USDC on an EVM chain, ' +
      "where they are not Circle's published ones (a devnet, a fork, the sandbox)",
  },
  {
    names: ['MAX_GAS_GWEI_<CHAIN>'],
    default: 'none',
    meaning:
      "the most a gas unit of the worker's own transactions on a chain may cost (the `cctp` " +
      'roads: approve, burn, mint), in gwei (e.g. `50`, `0.05`): a transaction whose price would ' +
      'exceed it waits, with that reason, and a stuck one is re-priced only up to it ' +
      "([the owner's transactions](cctp.md#the-owners-transactions))",
  },
  {
    names: ['MAX_FEE_BPS', 'MAX_FEE_USDC'],
    default: `${shown('MAX_FEE_BPS')}, none`,
    meaning: 'fee guard: a transfer whose estimated fee exceeds either is `rejected`, nothing signed',
  },
  {
    names: ['MAX_TRANSFER_USDC', 'MAX_BATCH_USDC', 'MAX_DAILY_USDC'],
    default: 'none',
    meaning:
      'a row over the first is invalid; a batch over the second is refused; the third caps all ' +
      'sending in any rolling 24 h (a transfer that would pass it waits `queued` with the reason). ' +
      "The worker applies its own before signing: a row over its first, or of a batch over its second, that the enqueuer accepted ends `rejected` ([the worker's own controls](promises.md#the-workers-own-controls))",
  },
  {
    names: ['APPROVAL_THRESHOLD_USDC'],
    default: 'none',
    meaning:
      'the batch that takes what was enqueued without approval in the rolling 24 h (itself, and ' +
      'rows re-queued by `retry`, included) to the threshold is held until approved (`approve`, or ' +
      'the approve route with a credential of role `approver`). The worker judges a batch enqueued ' +
      "under other controls with its own before signing, and holds it when they would ([the worker's own controls](promises.md#the-workers-own-controls))",
  },
  {
    names: ['APPROVALS_REQUIRED'],
    default: shown('APPROVALS_REQUIRED'),
    meaning:
      "approvals from distinct names, none of them the batch's submitter, that release a held batch " +
      '([four eyes](operating.md#four-eyes)); 1–10',
  },
  {
    names: ['AUDIT_LOG_FILE'],
    default: 'none',
    meaning:
      'every audit entry is also appended to this file (created `0600`), one JSON line each, ' +
      'hash-chained and fsynced before the action is acknowledged ([audit.md](audit.md))',
  },
  {
    names: ['USDC_BATCH_OPERATOR'],
    default: 'the OS user',
    meaning: 'the name the command line acts as: `cli:<name>` in the audit, `submitted_by` and approvals',
  },
  {
    names: ['ACCESS_FILE'],
    default: '—',
    meaning:
      "the HTTP API's named credentials and their roles, tokens stored as SHA-256 " +
      '([Access](http-api.md#access-credentials-and-roles)); `serve` re-reads it on SIGHUP. With it ' +
      'set, `HOOK_TOKEN`, `APPROVER_TOKEN` and `METRICS_TOKEN` must be unset',
  },
  {
    names: ['HOOK_TOKEN', 'APPROVER_TOKEN', 'METRICS_TOKEN'],
    default: '—',
    meaning:
      'without `ACCESS_FILE`: the credentials `hook` (roles submitter, operator, viewer), ' +
      '`approver` (approver, viewer) and `metrics` (metrics); all different, each at least 16 ' +
      'characters (`openssl rand -hex 32`)',
  },
  {
    names: ['NEW_RECIPIENT_POLICY'],
    default: shown('NEW_RECIPIENT_POLICY'),
    meaning:
      'a row paying an address not in the address book: `allow` (paid, flagged `new_recipient`), ' +
      '`hold` (the batch is held for approval; approving adds the addresses to the book) or ' +
      '`reject` (the row is invalid at its line). `hold` and `reject` need an approver credential ' +
      '(`APPROVER_TOKEN`, or an `approver` in `ACCESS_FILE`): a configuration error at start ' +
      'otherwise. An address removed from the book is held under every policy',
  },
  {
    names: ['NEW_RECIPIENT_MAX_USDC'],
    default: 'none',
    meaning:
      'under `allow`: a batch is held once what an address not yet known would be paid in all — ' +
      'across finished and unfinished batches, until it is known — passes this (a first payment ' +
      'above it too); needs an approver credential, as `hold` does',
  },
  {
    names: ['SCREENING_LISTS'],
    default: 'none',
    meaning:
      "sanctions lists, comma-separated files: OFAC's `sdn_advanced.xml` or classic `sdn.xml` as " +
      'OFAC publishes them (every "Digital Currency Address - …" entry, whatever the asset), or plain ' +
      'text (one address per line, `#` comments, an optional `# date: YYYY-MM-DD` line; else the ' +
      "file's modification time is its date). A listed recipient is refused at enqueue, kept out of " +
      'the address book and rejected before signing (`recipient_sanctioned`). Read at start (a file ' +
      'that cannot be read or parsed is a configuration error naming it), read again when a file ' +
      'changes (looked at every 60 s) and on SIGHUP; a file that then fails leaves the lists in ' +
      'force, logged at `error`. Unset on `mainnet`, the worker warns at start ([screening.md](screening.md))',
  },
  {
    names: ['SCREENING_MAX_AGE'],
    default: shown('SCREENING_MAX_AGE'),
    meaning:
      'a list whose date of issue is older (`30m`, `12h`, `7d`…) makes screening **stale**: no ' +
      'transfer is signed (they wait `queued`, the reason in their status) until a fresh list is loaded',
  },
  {
    names: ['SCREENING_ONCHAIN'],
    default: shown('SCREENING_ONCHAIN'),
    meaning:
      "`on` or `off`: before anything is signed, read USDC's own controls on chain where an RPC " +
      'for that chain is configured — `isBlacklisted` of the EVM recipient on its destination chain ' +
      "and of the EVM owner that would pay on its source chain, the Solana recipient's USDC account " +
      'frozen or not ([promises](promises.md), promise 6)',
  },
  {
    names: ['CALLBACK_ALLOWED_HOSTS'],
    default: 'none',
    meaning:
      'comma-separated `host` or `host:port` entries a `callback_url` may name (`[::1]:8080` for ' +
      "IPv6 with a port); a bare host allows only its scheme's default port (443, or 80 for " +
      'loopback http). https; http only for loopback hosts',
  },
  {
    names: ['SOLANA_ALLOWED_DESTINATIONS'],
    default: '—',
    meaning: 'token accounts a built Solana transaction may pay into',
  },
  {
    names: ['WORKER_CONCURRENCY'],
    default: shown('WORKER_CONCURRENCY'),
    meaning:
      'jobs per worker process and source chain; on an EVM chain at most 6 per owner key (one ' +
      "owner's permits go one at a time: the jobs beyond wait in the queue, at no cost)",
  },
  {
    names: ['TRANSFER_JOBS_KEPT'],
    default: shown('TRANSFER_JOBS_KEPT'),
    meaning:
      'how long and how many finished transfer jobs BullMQ keeps, per queue (one per source chain): ' +
      '`AGE/COUNT` for completed jobs, then for failed ones (AGE a whole number with `s`, `m`, `h` ' +
      "or `d`); trimmed as jobs finish. Every transfer's outcome stays in `status`, `export` and the " +
      'pages ([data-model.md](data-model.md))',
  },
  {
    names: ['TREASURY_BALANCE_INTERVAL_MS'],
    default: shown('TREASURY_BALANCE_INTERVAL_MS'),
    meaning:
      "how often each worker reads the treasury's USDC balance on every chain it has a key and an " +
      'RPC for, for `usdc_batch_treasury_balance_usdc{chain}` on `/metrics` ([Treasury ' +
      "rebalancing](rebalancing.md)), and each EVM owner's native gas there, for " +
      '`usdc_batch_owner_gas_native{chain,owner}` ([CCTP](cctp.md#funding-owners-with-gas)); `0` turns it off',
  },
  {
    names: ['API_RATE_LIMIT'],
    default: 'none',
    meaning:
      'requests per second to the service across all workers, in any second (a sliding window in ' +
      'Redis; retries count); `enqueue --dry-run`, which needs no Redis, keeps its own requests ' +
      'under it',
  },
  {
    names: ['HTTP_HOST', 'HTTP_PORT'],
    default: shown('HTTP_HOST', 'HTTP_PORT'),
    meaning:
      "the HTTP API's address: loopback only by default (`0.0.0.0` for every interface); `serve` " +
      'prints the address it is bound to',
  },
  {
    names: ['HOOK_HMAC_SECRET'],
    default: '—',
    meaning:
      'the optional secret `POST /v1/batches` must be signed with; at least 16 characters, like ' +
      'every token, or the configuration is refused at start (exit 2): make one with `openssl rand ' +
      '-hex 32`',
  },
  {
    names: ['HTTP_HEADERS_TIMEOUT_MS', 'HTTP_REQUEST_TIMEOUT_MS'],
    default: shown('HTTP_HEADERS_TIMEOUT_MS', 'HTTP_REQUEST_TIMEOUT_MS'),
    meaning:
      "a request's headers must arrive within the first, the whole request (body included) within " +
      'the second, or it is answered 408 and closed; the first may not exceed the second',
  },
  {
    names: ['HTTP_IDLE_TIMEOUT_MS'],
    default: shown('HTTP_IDLE_TIMEOUT_MS'),
    meaning: 'a kept-alive connection idle this long between requests is closed',
  },
  {
    names: ['HTTP_MAX_CONNECTIONS'],
    default: shown('HTTP_MAX_CONNECTIONS'),
    meaning: 'connections open at once; one beyond it is closed on arrival (and logged)',
  },
  {
    names: ['HTTP_AUTH_FAILURE_LIMIT'],
    default: shown('HTTP_AUTH_FAILURE_LIMIT'),
    meaning:
      'failed authentications of one client address within a minute that get it `429` (with ' +
      '`Retry-After`) on every route but `/healthz` for 60 s — a valid credential is never refused ' +
      'by it; `0` turns it off',
  },
  {
    names: ['HTTP_TRUSTED_PROXIES'],
    default: 'none',
    meaning:
      'comma-separated addresses or CIDRs (`10.0.0.0/8`, `::1`; or `loopback`, `linklocal`, ' +
      '`uniquelocal`) of reverse proxies in front of `serve`: a connection from one of them names ' +
      'its client in `X-Forwarded-For` (the nearest address not itself a trusted proxy), which the ' +
      'failure limit counts by; from anywhere else the header is ignored',
  },
  {
    names: ['LOG_LEVEL'],
    default: shown('LOG_LEVEL'),
    meaning: 'pino level',
  },
  {
    names: ['LOG_FORMAT'],
    default: '`pretty` on a terminal, else `json`',
    meaning:
      '`json`: one pino JSON object per line on stderr; `pretty`: one readable line per record ' +
      '(`12:34:56.789 WARN  message key=value …`), on stderr too. Nothing is ever logged to stdout',
  },
  {
    names: [
      'OTEL_EXPORTER_OTLP_ENDPOINT',
      'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
      'OTEL_EXPORTER_OTLP_PROTOCOL',
      'OTEL_EXPORTER_OTLP_HEADERS',
      'OTEL_SERVICE_NAME',
      'OTEL_TRACES_SAMPLER',
      'OTEL_TRACES_SAMPLER_ARG',
      'OTEL_SDK_DISABLED',
    ],
    default: 'off',
    meaning:
      'OpenTelemetry traces of `worker`, `serve` and `enqueue`, with the standard variables’ meanings ' +
      '(OTLP over HTTP: `http/protobuf`, the default, or `http/json`); off unless an endpoint is set, ' +
      'and with `OTEL_SDK_DISABLED=true` ([production.md](production.md#traces), [traces.md](traces.md))',
    readElsewhere: 'src/trace/trace-settings.ts, before the command loads its configuration',
  },
  {
    names: ['PERMIT_DEADLINE_SECONDS'],
    default: shown('PERMIT_DEADLINE_SECONDS'),
    meaning: "a permit's deadline after signing (short on purpose)",
  },
  {
    names: ['SERVICE_CONNECT_TIMEOUT_MS', 'SERVICE_RESPONSE_TIMEOUT_MS'],
    default: shown('SERVICE_CONNECT_TIMEOUT_MS', 'SERVICE_RESPONSE_TIMEOUT_MS'),
    meaning: 'per-request timeouts to the service',
  },
  {
    names: ['NONCE_SETTLE_WINDOW_MS'],
    default: shown('NONCE_SETTLE_WINDOW_MS'),
    meaning:
      'how long a permit refused on its first send waits for the chain before the refusal is final ' +
      '(at most `120000`, inside the 3-minute budget): an RPC a few seconds behind shows a nonce an ' +
      'outside signer used only then (see [Permit ' +
      'nonces](nonces.md#permit-nonces-a-lagging-rpc-an-outside-signer))',
  },
  {
    names: ['WORKER_LOCK_MS'],
    default: shown('WORKER_LOCK_MS'),
    meaning:
      'how long the holds of a worker that died (kill -9, out of memory, a lost machine) outlive it: ' +
      "its transfers are taken over by another worker after about this long, its owners' permit " +
      'nonces after twice it, their CCTP burns after four times it (a live worker renews them long ' +
      'before); the sweeper looks every this long for transfers without a live job in batches quiet ' +
      'twice it. Shorter means a faster takeover, and less room for a worker whose event loop stalls; ' +
      'it must leave the nonce lease room for one service call (see [When a worker ' +
      'dies](operating.md#when-a-worker-dies))',
  },
];

/**
 * What docker-compose.yml reads from `.env` or the shell (`${NAME:-default}`), beside the product's
 * variables: the Redis password, the published ports and the metrics token's file. The defaults shown
 * are the file's.
 */
export const COMPOSE_VARIABLES: readonly ConfigVariable[] = [
  {
    names: ['REDIS_PASSWORD'],
    default: 'none (no password)',
    meaning:
      'the compose Redis’s password, given to the worker and the API in their `REDIS_URL`: letters, ' +
      'digits and `. _ ~ -` only (e.g. `openssl rand -hex 32`); the CLI on the host then uses ' +
      '`redis://:PASSWORD@127.0.0.1:6379` (docs/security.md "In compose")',
  },
  {
    names: ['REDIS_PORT'],
    default: '`6379`',
    meaning: 'the host port of the compose Redis, published on `127.0.0.1` only',
  },
  {
    names: ['HTTP_PORT'],
    default: '`8080`',
    meaning:
      'the host port of the `production` profile’s API, on every interface (put TLS in front of it); ' +
      'inside its container the API listens on 8080',
  },
  {
    names: ['SANDBOX_HTTP_PORT'],
    default: '`8081`',
    meaning: 'the host port of the `sandbox` profile’s API, on `127.0.0.1` only',
  },
  {
    names: ['PROMETHEUS_PORT'],
    default: '`9090`',
    meaning: 'the host port of the `monitoring` profile’s Prometheus, on `127.0.0.1` only',
  },
  {
    names: ['GRAFANA_PORT'],
    default: '`3000`',
    meaning: 'the host port of the `monitoring` profile’s Grafana, on `127.0.0.1` only',
  },
  {
    names: ['JAEGER_PORT'],
    default: '`16686`',
    meaning: 'the host port of the `monitoring` profile’s Jaeger UI, on `127.0.0.1` only',
  },
  {
    names: ['OTLP_HTTP_PORT'],
    default: '`4318`',
    meaning:
      'the host port of the `monitoring` profile’s Jaeger OTLP/HTTP receiver, on `127.0.0.1` only ' +
      '(for `enqueue` on this host)',
  },
  {
    names: ['SANDBOX_OTLP_ENDPOINT'],
    default: 'none (no traces)',
    meaning:
      'where the `sandbox` profile’s worker and API send traces; with the `monitoring` profile up, ' +
      '`http://jaeger:4318` ([production.md](production.md#traces))',
  },
  {
    names: ['METRICS_TOKEN_FILE'],
    default: '`./secrets/metrics-token`',
    meaning:
      'the file holding the token of a credential with role `metrics` (the production API’s ' +
      '`METRICS_TOKEN`, or an `ACCESS_FILE` entry), which Prometheus sends to scrape the ' +
      '`production` profile’s API; never `HOOK_TOKEN`. Compose mounts it as a secret, so it must ' +
      'exist whenever the `monitoring` profile runs ([production.md](production.md#monitoring-with-the-sandbox-profile))',
  },
];
