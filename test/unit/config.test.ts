import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { Secret } from '../../src/config/config.ts';
import { DEFAULTS } from '../../src/config/defaults.ts';
import { readEnv } from '../../src/config/env-reader.ts';
import { loadConfig, spenderFor } from '../../src/config/load-config.ts';
import { workerSourceChains } from '../../src/config/source-chains.ts';
import { tokenDigest } from '../../src/domain/access.ts';
import { encodeBase58 } from '../../src/domain/base58.ts';
import { ConfigError } from '../../src/domain/errors.ts';
import { signingKeys } from '../../src/signing/evm/keystore.ts';

const dir = mkdtempSync(join(tmpdir(), 'usdc-batch-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const EVM_KEY = `0x${'4c'.repeat(32)}`;
const SPENDER = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
const SPENDER_BASE = '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359';
const API_KEY = 'sk_test_Zq81hJ2kLmN0pQ';
/** What a process that signs gives loadConfig (docs/keys.md): key settings are read. */
const KEYS = { keys: signingKeys } as const;

/** A real Ed25519 keypair in solana-keygen's layout: 32-byte seed ‖ 32-byte public key. */
function solanaKeypair(): Uint8Array {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const d = Buffer.from(privateKey.export({ format: 'jwk' }).d as string, 'base64url');
  const x = Buffer.from(publicKey.export({ format: 'jwk' }).x as string, 'base64url');
  return Uint8Array.from([...d, ...x]);
}

function problemsOf(env: Record<string, string>, needs: Parameters<typeof loadConfig>[1] = {}) {
  try {
    loadConfig(env, needs);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('the configuration was accepted');
}

describe('loadConfig', () => {
  it('applies the documented defaults to an empty environment, and freezes the result', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      redisUrl: DEFAULTS.REDIS_URL,
      redisUrlSet: false,
      allowVolatileRedis: false,
      queuePrefix: 'usdc',
      network: 'testnet',
      maxFeeBps: 100n,
      maxFeeUsdc: undefined,
      maxTransferUsdc: undefined,
      workerConcurrency: DEFAULTS.WORKER_CONCURRENCY,
      apiRateLimit: undefined,
      httpHost: '127.0.0.1',
      httpPort: 8080,
      httpHeadersTimeoutMs: 10_000,
      httpRequestTimeoutMs: 30_000,
      httpIdleTimeoutMs: 5_000,
      httpMaxConnections: 1_000,
      logLevel: 'info',
      callbackAllowedHosts: [],
      solanaAllowedDestinations: undefined,
      transferApiUrl: undefined,
      evmPrivateKeys: [],
      solanaSecretKey: undefined,
    });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.evmRpcUrl)).toBe(true);
  });

  it('parses every variable of the product contract', () => {
    const solana = solanaKeypair();
    const destination = encodeBase58(new Uint8Array(32).fill(7));
    const config = loadConfig(
      {
        REDIS_URL: 'redis://:pw@redis.internal:6380/2',
        ALLOW_VOLATILE_REDIS: 'true',
        QUEUE_PREFIX: '{usdc}',
        TRANSFER_API_URL: 'https://api.example.com/',
        TRANSFER_API_KEY: API_KEY,
        NETWORK: 'Mainnet',
        EVM_PRIVATE_KEY: EVM_KEY.slice(2).toUpperCase(),
        SOLANA_PRIVATE_KEY: encodeBase58(solana),
        PERMIT_SPENDER: SPENDER.toLowerCase(),
        PERMIT_SPENDER_BASE: SPENDER_BASE,
        EVM_RPC_URL_ETH: 'https://eth.example.com',
        EVM_RPC_URL_BASE: 'https://base.example.com',
        EVM_RPC_URL_ARB: 'https://arb.example.com',
        EVM_RPC_URL_POLYGON: 'http://polygon.example.com:8545',
        SOLANA_RPC_URL: 'https://solana.example.com',
        MAX_FEE_BPS: '250',
        MAX_FEE_USDC: '1.5',
        MAX_TRANSFER_USDC: '1000',
        MAX_BATCH_USDC: '50000.25',
        MAX_DAILY_USDC: '100000',
        APPROVAL_THRESHOLD_USDC: '10000',
        APPROVER_TOKEN: 'approver-token-0123456789',
        CALLBACK_ALLOWED_HOSTS: 'Hooks.Example.com, ops.example.org',
        SOLANA_ALLOWED_DESTINATIONS: destination,
        WORKER_CONCURRENCY: '32',
        API_RATE_LIMIT: '20',
        HTTP_HOST: '0.0.0.0',
        HTTP_PORT: '9090',
        HTTP_HEADERS_TIMEOUT_MS: '5000',
        HTTP_REQUEST_TIMEOUT_MS: '120000',
        HTTP_IDLE_TIMEOUT_MS: '2000',
        HTTP_MAX_CONNECTIONS: '200',
        HOOK_TOKEN: 'hook-token-0123456789',
        HOOK_HMAC_SECRET: 'hmac-secret-0123456789',
        LOG_LEVEL: 'DEBUG',
      },
      KEYS,
    );
    expect(config).toMatchObject({
      redisUrl: 'redis://:pw@redis.internal:6380/2',
      redisUrlSet: true,
      allowVolatileRedis: true,
      queuePrefix: '{usdc}',
      transferApiUrl: 'https://api.example.com',
      network: 'mainnet',
      permitSpender: SPENDER,
      permitSpenderByChain: { BASE: SPENDER_BASE },
      evmRpcUrl: {
        ETH: 'https://eth.example.com',
        BASE: 'https://base.example.com',
        ARB: 'https://arb.example.com',
        POLYGON: 'http://polygon.example.com:8545',
      },
      solanaRpcUrl: 'https://solana.example.com',
      maxFeeBps: 250n,
      maxFeeUsdc: 1_500_000n,
      maxTransferUsdc: 1_000_000_000n,
      maxBatchUsdc: 50_000_250_000n,
      maxDailyUsdc: 100_000_000_000n,
      approvalThresholdUsdc: 10_000_000_000n,
      callbackAllowedHosts: ['hooks.example.com', 'ops.example.org'],
      solanaAllowedDestinations: [destination],
      workerConcurrency: 32,
      apiRateLimit: 20,
      httpHost: '0.0.0.0',
      httpPort: 9090,
      httpHeadersTimeoutMs: 5_000,
      httpRequestTimeoutMs: 120_000,
      httpIdleTimeoutMs: 2_000,
      httpMaxConnections: 200,
      logLevel: 'debug',
    });
    expect(config.transferApiKey?.reveal()).toBe(API_KEY);
    expect(config.evmPrivateKeys.map((k) => k.reveal())).toEqual([EVM_KEY]);
    expect(config.solanaSecretKey).toEqual(solana);
    // The tokens are kept as their SHA-256 only (docs/access.md): the credentials hook and approver.
    expect(config.credentials).toEqual([
      {
        name: 'hook',
        roles: ['submitter', 'operator', 'viewer'],
        sha256: tokenDigest('hook-token-0123456789'),
      },
      { name: 'approver', roles: ['approver', 'viewer'], sha256: tokenDigest('approver-token-0123456789') },
    ]);
    expect(config.hookHmacSecret?.reveal()).toBe('hmac-secret-0123456789');
    expect(spenderFor(config, 'BASE')).toBe(SPENDER_BASE);
    expect(spenderFor(config, 'ETH')).toBe(SPENDER);
  });

  it('reads NONCE_SETTLE_WINDOW_MS (default 20 s), and refuses a window beyond the 3-minute budget', () => {
    expect(loadConfig({}).nonceSettleWindowMs).toBe(20_000);
    expect(loadConfig({ NONCE_SETTLE_WINDOW_MS: '1500' }).nonceSettleWindowMs).toBe(1_500);
    for (const bad of ['-1', '120001', '2s']) {
      expect(problemsOf({ NONCE_SETTLE_WINDOW_MS: bad }).problems).toEqual([
        {
          variable: 'NONCE_SETTLE_WINDOW_MS',
          message: `must be a whole number from 0 to 120000 (got "${bad}")`,
        },
      ]);
    }
  });

  it('reads WORKER_LOCK_MS (default 30 s) and refuses one whose nonce lease could lapse during a service call', () => {
    expect(loadConfig({}).workerLockMs).toBe(30_000);
    expect(loadConfig({ WORKER_LOCK_MS: '10000' }).workerLockMs).toBe(10_000);
    // Twice 8 s = 16 s < 2.7 s extension interval + 3 s connect + 10 s response + 2 s.
    const [tooShort] = problemsOf({ WORKER_LOCK_MS: '8000' }).problems;
    expect(tooShort?.variable).toBe('WORKER_LOCK_MS');
    expect(tooShort?.message).toMatch(/SERVICE_CONNECT_TIMEOUT_MS \+ SERVICE_RESPONSE_TIMEOUT_MS = 13000 ms/);
    // Shorter service timeouts leave room for a shorter lock.
    const quick = {
      WORKER_LOCK_MS: '5000',
      SERVICE_CONNECT_TIMEOUT_MS: '1000',
      SERVICE_RESPONSE_TIMEOUT_MS: '3000',
    };
    expect(loadConfig(quick).workerLockMs).toBe(5_000);
    expect(problemsOf({ WORKER_LOCK_MS: '600001' }).problems).toEqual([
      { variable: 'WORKER_LOCK_MS', message: 'must be a whole number from 1000 to 600000 (got "600001")' },
    ]);
  });

  it('reports every problem at once, each naming its variable', () => {
    const err = problemsOf(
      {
        REDIS_URL: 'http://localhost:6379',
        QUEUE_PREFIX: 'usdc:prod',
        TRANSFER_API_URL: 'not a url',
        TRANSFER_API_KEY: 'wrong',
        NETWORK: 'devnet',
        EVM_PRIVATE_KEY: '0x1234',
        SOLANA_PRIVATE_KEY: 'abc',
        PERMIT_SPENDER: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD',
        EVM_RPC_URL_ARB: 'ftp://arb.example.com',
        MAX_FEE_BPS: '10001',
        MAX_FEE_USDC: '-1',
        MAX_TRANSFER_USDC: '1e3',
        MAX_BATCH_USDC: '1,000',
        MAX_DAILY_USDC: '0',
        APPROVAL_THRESHOLD_USDC: '.5',
        HOOK_TOKEN: 'has a space in this token',
        CALLBACK_ALLOWED_HOSTS: 'ok.example.com',
        SOLANA_ALLOWED_DESTINATIONS: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
        WORKER_CONCURRENCY: '-3',
        API_RATE_LIMIT: 'fast',
        HTTP_PORT: '70000',
        ALLOW_VOLATILE_REDIS: 'maybe',
        LOG_LEVEL: 'loud',
      },
      KEYS,
    );
    expect(err.problems.map((p) => p.variable).sort()).toEqual(
      [
        'ALLOW_VOLATILE_REDIS',
        'API_RATE_LIMIT',
        'APPROVAL_THRESHOLD_USDC',
        'EVM_PRIVATE_KEY',
        'EVM_RPC_URL_ARB',
        'HOOK_TOKEN',
        'HTTP_PORT',
        'LOG_LEVEL',
        'MAX_BATCH_USDC',
        'MAX_DAILY_USDC',
        'MAX_FEE_BPS',
        'MAX_FEE_USDC',
        'MAX_TRANSFER_USDC',
        'NETWORK',
        'PERMIT_SPENDER',
        'QUEUE_PREFIX',
        'REDIS_URL',
        'SOLANA_ALLOWED_DESTINATIONS',
        'SOLANA_PRIVATE_KEY',
        'TRANSFER_API_KEY',
        'TRANSFER_API_URL',
        'WORKER_CONCURRENCY',
      ].sort(),
    );
    expect(err.code).toBe('USDC_CONFIG_INVALID');
    for (const p of err.problems) expect(err.message).toContain(`  - ${p.variable}: ${p.message}`);
    expect(err.message).toContain('WORKER_CONCURRENCY: must be a whole number from 1 to 1024 (got "-3")');
    expect(err.message).toContain('PERMIT_SPENDER: has an invalid EIP-55 checksum');
    expect(err.message).toContain('MAX_TRANSFER_USDC: must be a USDC amount: it must be a plain decimal');
  });

  it('takes CALLBACK_ALLOWED_HOSTS entries as host or host:port, and reports anything else', () => {
    expect(
      loadConfig({ CALLBACK_ALLOWED_HOSTS: 'Hooks.example.com:8443, 127.0.0.1, [::1]:9000' })
        .callbackAllowedHosts,
    ).toEqual(['hooks.example.com:8443', '127.0.0.1', '[::1]:9000']);
    const err = problemsOf({ CALLBACK_ALLOWED_HOSTS: 'https://hooks.example.com/cb,127.0.0.1:99999' });
    expect(err.problems).toEqual([
      {
        variable: 'CALLBACK_ALLOWED_HOSTS',
        message: '"https://hooks.example.com/cb" is not a host or host:port',
      },
      { variable: 'CALLBACK_ALLOWED_HOSTS', message: '"127.0.0.1:99999" is not a host or host:port' },
    ]);
  });

  it('validates the HTTP server settings: a host, timeouts in range, headers within the request deadline', () => {
    for (const host of ['::1', '::', '10.0.0.7', 'localhost', 'api.internal.example.com']) {
      expect(loadConfig({ HTTP_HOST: host }).httpHost, host).toBe(host);
    }
    const err = problemsOf({
      HTTP_HOST: 'http://0.0.0.0',
      HTTP_HEADERS_TIMEOUT_MS: '20000',
      HTTP_REQUEST_TIMEOUT_MS: '15000',
      HTTP_IDLE_TIMEOUT_MS: '0',
      HTTP_MAX_CONNECTIONS: 'many',
    });
    expect(err.problems).toEqual([
      { variable: 'HTTP_HOST', message: 'must be an IP address or a host name (got "http://0.0.0.0")' },
      { variable: 'HTTP_HEADERS_TIMEOUT_MS', message: 'must not exceed HTTP_REQUEST_TIMEOUT_MS (15000)' },
      {
        variable: 'HTTP_IDLE_TIMEOUT_MS',
        message: 'must be a whole number from 100 to 600000 (got "0")',
      },
      {
        variable: 'HTTP_MAX_CONNECTIONS',
        message: 'must be a whole number from 1 to 1000000 (got "many")',
      },
    ]);
  });

  it('names the variable of a URL that a client could not use: a bad %-escape, no host, a Redis path that is no database', () => {
    const escape = 'has a malformed %-escape in its user name or password (write % as %25)';
    for (const [env, message] of [
      [{ REDIS_URL: 'redis://:%zz@127.0.0.1:6380' }, escape],
      [{ REDIS_URL: 'rediss://us%e:pw@redis.internal' }, escape],
      [{ EVM_RPC_URL_BASE: 'https://user:%E0%A4%A@rpc.example.com/' }, escape],
      [{ REDIS_URL: 'redis://' }, 'must name a host'],
      [{ REDIS_URL: 'redis:///0' }, 'must name a host'],
      [
        { REDIS_URL: 'redis://127.0.0.1:6380/abc' },
        'must end in a database number, if anything (redis://host:6379/0)',
      ],
      [
        { REDIS_URL: 'redis://127.0.0.1:6380/%zz' },
        'must end in a database number, if anything (redis://host:6379/0)',
      ],
    ] as const) {
      const [variable] = Object.keys(env);
      expect(problemsOf(env).problems, JSON.stringify(env)).toEqual([{ variable, message }]);
    }
    // What a client can use: an encoded % (%25) and other escapes in the password, a database number.
    expect(loadConfig({ REDIS_URL: 'rediss://default:p%25w%40rd@redis.internal:6380/3' }).redisUrl).toBe(
      'rediss://default:p%25w%40rd@redis.internal:6380/3',
    );
    expect(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6380/' }).redisUrl).toBe('redis://127.0.0.1:6380');
  });

  it('never puts a secret, valid or malformed, into a message or the printed config', () => {
    const secrets = {
      TRANSFER_API_KEY: 'sk_live_but-has-a-space in it',
      EVM_PRIVATE_KEY: `0x${'ab'.repeat(31)}zz`,
      SOLANA_PRIVATE_KEY: `${encodeBase58(solanaKeypair()).slice(0, -3)}0OI`,
      HOOK_TOKEN: 'hook-secret-0123456789',
      APPROVER_TOKEN: 'hook-secret-0123456789',
      REDIS_URL: 'redis://:redis-password-123@:bad-port',
      TRANSFER_API_URL: 'https://user:url-password-123@@',
    };
    const err = problemsOf(secrets, KEYS);
    expect(err.problems.length).toBeGreaterThanOrEqual(6);
    const text = `${err.message}\n${JSON.stringify(err.problems)}\n${inspect(err)}`;
    for (const value of Object.values(secrets)) expect(text).not.toContain(value);
    for (const fragment of ['redis-password-123', 'url-password-123', 'but-has-a-space', 'hook-secret'])
      expect(text).not.toContain(fragment);

    const solana = solanaKeypair();
    const valid = loadConfig(
      {
        TRANSFER_API_KEY: API_KEY,
        EVM_PRIVATE_KEY: EVM_KEY,
        SOLANA_PRIVATE_KEY: encodeBase58(solana),
        HOOK_TOKEN: 'hook-token-0123456789',
        APPROVER_TOKEN: 'approver-token-0123456789',
        HOOK_HMAC_SECRET: 'hmac-secret-value',
      },
      KEYS,
    );
    const printed = `${JSON.stringify(valid, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}\n${inspect(valid)}\n${String(valid.transferApiKey)}`;
    for (const value of [
      API_KEY,
      EVM_KEY,
      '4c4c4c4c',
      'hook-token-0123456789',
      'approver-token',
      'hmac-secret-value',
    ])
      expect(printed).not.toContain(value);
    // The Solana key is bytes: neither inspect's "Uint8Array(64) [ ... ]" nor JSON's {"0": ...}.
    expect(printed).not.toContain('Uint8Array');
    expect(printed).not.toContain('"0":');
    expect(valid.solanaSecretKey).toEqual(solana);
    expect(new Secret('x').toString()).toBe('[secret]');
  });

  it('refuses an EVM key that is zero or not below the secp256k1 order', () => {
    for (const key of [`0x${'0'.repeat(64)}`, `0x${'f'.repeat(64)}`]) {
      expect(problemsOf({ EVM_PRIVATE_KEY: key }, KEYS).problems).toEqual([
        { variable: 'EVM_PRIVATE_KEY', message: 'must hold a 32-byte hex private key' },
      ]);
    }
  });

  it('reads the EVM key from EVM_PRIVATE_KEY_FILE, and refuses both or an unreadable file', () => {
    const file = join(dir, 'evm.key');
    writeFileSync(file, `${EVM_KEY}\n`);
    expect(loadConfig({ EVM_PRIVATE_KEY_FILE: file }, KEYS).evmPrivateKeys.map((k) => k.reveal())).toEqual([
      EVM_KEY,
    ]);
    expect(problemsOf({ EVM_PRIVATE_KEY_FILE: file, EVM_PRIVATE_KEY: EVM_KEY }, KEYS).problems).toEqual([
      {
        variable: 'EVM_PRIVATE_KEY',
        message: 'set either EVM_PRIVATE_KEY or EVM_PRIVATE_KEY_FILE, not both',
      },
    ]);
    const missing = join(dir, 'missing.key');
    expect(problemsOf({ EVM_PRIVATE_KEY_FILE: missing }, KEYS).problems).toEqual([
      { variable: 'EVM_PRIVATE_KEY_FILE', message: `${missing} cannot be read (ENOENT)` },
    ]);
    const bad = join(dir, 'bad.key');
    writeFileSync(bad, 'not a key');
    expect(problemsOf({ EVM_PRIVATE_KEY_FILE: bad }, KEYS).problems).toEqual([
      { variable: 'EVM_PRIVATE_KEY_FILE', message: 'must hold a 32-byte hex private key' },
    ]);
  });

  describe('several treasury owners in EVM_PRIVATE_KEY / EVM_PRIVATE_KEY_FILE', () => {
    // anvil's well-known dev keys 0, 1 and 2 (public test keys, never funded on a real chain).
    const K1 = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
    const K2 = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d';
    const K3 = '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a';
    const revealed = (env: Record<string, string>) =>
      loadConfig(env, KEYS).evmPrivateKeys.map((k) => k.reveal());
    /** Every secret fragment a message could leak: the whole key, with and without 0x, and its halves. */
    const fragmentsOf = (key: string) => {
      const hex = key.replace(/^0x/i, '').toLowerCase();
      return [hex, hex.slice(0, 32), hex.slice(32)];
    };
    const leaks = (err: ConfigError, keys: string[]) => {
      const text = `${err.message}\n${JSON.stringify(err.problems)}\n${inspect(err)}`.toLowerCase();
      return keys.flatMap(fragmentsOf).filter((f) => text.includes(f));
    };

    it('reads a comma-separated list in the given order, with or without 0x, spaces around each', () => {
      expect(revealed({ EVM_PRIVATE_KEY: `${K1}, ${K2.slice(2).toUpperCase()} ,${K3}` })).toEqual([
        K1,
        K2,
        K3,
      ]);
      // A trailing comma or an empty entry is not a key.
      expect(revealed({ EVM_PRIVATE_KEY: `${K2},,${K1},` })).toEqual([K2, K1]);
      // Each key is one owner: the worker, wallets and the dry run see them all.
      const chains = workerSourceChains(
        loadConfig({ EVM_PRIVATE_KEY: `${K1},${K2}`, PERMIT_SPENDER: SPENDER }, KEYS),
      );
      expect(chains).toEqual(['ETH', 'BASE', 'ARB', 'POLYGON']);
    });

    it('reads a file with one key per line (CRLF, blank lines and commas tolerated)', () => {
      const file = join(dir, 'owners.keys');
      writeFileSync(file, `${K1}\r\n\r\n${K2}\n  ${K3.slice(2)}  \n`);
      expect(revealed({ EVM_PRIVATE_KEY_FILE: file })).toEqual([K1, K2, K3]);
      writeFileSync(file, `${K3},${K1}\n${K2}\n`);
      expect(revealed({ EVM_PRIVATE_KEY_FILE: file })).toEqual([K3, K1, K2]);
    });

    it('refuses a key given twice, naming both positions and neither key', () => {
      const err = problemsOf({ EVM_PRIVATE_KEY: `${K1},${K2},${K1.slice(2).toUpperCase()}` }, KEYS);
      expect(err.problems).toEqual([
        { variable: 'EVM_PRIVATE_KEY', message: 'key 3 of 3 repeats key 1 (each owner once)' },
      ]);
      expect(leaks(err, [K1, K2])).toEqual([]);
      const file = join(dir, 'twice.keys');
      writeFileSync(file, `${K2}\n${K2}\n`);
      const fromFile = problemsOf({ EVM_PRIVATE_KEY_FILE: file }, KEYS);
      expect(fromFile.problems).toEqual([
        { variable: 'EVM_PRIVATE_KEY_FILE', message: 'key 2 of 2 repeats key 1 (each owner once)' },
      ]);
      expect(leaks(fromFile, [K2])).toEqual([]);
    });

    it('names a malformed key by its position without echoing it or the good ones, and loads none', () => {
      // One hex digit short, a key with a space inside, a key above the secp256k1 order.
      const short = K2.slice(0, -1);
      const spaced = `${K3.slice(0, 30)} ${K3.slice(30)}`;
      const err = problemsOf({ EVM_PRIVATE_KEY: `${K1},${short},${spaced},0x${'f'.repeat(64)}` }, KEYS);
      expect(err.problems).toEqual([
        { variable: 'EVM_PRIVATE_KEY', message: 'key 2 of 4 is not a 32-byte hex private key' },
        { variable: 'EVM_PRIVATE_KEY', message: 'key 3 of 4 is not a 32-byte hex private key' },
        { variable: 'EVM_PRIVATE_KEY', message: 'key 4 of 4 is not a 32-byte hex private key' },
      ]);
      expect(leaks(err, [K1, short, K3])).toEqual([]);
      expect(`${err.message}${JSON.stringify(err.problems)}`).not.toContain('f'.repeat(16));
      const file = join(dir, 'bad-second.keys');
      writeFileSync(file, `${K1}\nnot a key\n`);
      const fromFile = problemsOf({ EVM_PRIVATE_KEY_FILE: file }, KEYS);
      expect(fromFile.problems).toEqual([
        { variable: 'EVM_PRIVATE_KEY_FILE', message: 'key 2 of 2 is not a 32-byte hex private key' },
      ]);
      expect(JSON.stringify(fromFile.problems)).not.toContain('not a key');
      expect(leaks(fromFile, [K1])).toEqual([]);
    });

    it('keeps every key out of the printed config', () => {
      const config = loadConfig({ EVM_PRIVATE_KEY: `${K1},${K2},${K3}` }, KEYS);
      const json = JSON.stringify(config, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
      const printed = `${json}\n${inspect(config, { depth: 10 })}\n${String(config.evmPrivateKeys)}`;
      for (const f of [K1, K2, K3].flatMap(fragmentsOf)) expect(printed.toLowerCase()).not.toContain(f);
    });
  });

  it('reads a solana-keygen JSON keypair file and refuses one whose halves do not belong together', () => {
    const keypair = solanaKeypair();
    const good = join(dir, 'id.json');
    writeFileSync(good, JSON.stringify([...keypair]));
    expect(loadConfig({ SOLANA_KEYPAIR_FILE: good }, KEYS).solanaSecretKey).toEqual(keypair);

    const other = solanaKeypair();
    const mixed = join(dir, 'mixed.json');
    writeFileSync(mixed, JSON.stringify([...keypair.subarray(0, 32), ...other.subarray(32)]));
    expect(problemsOf({ SOLANA_KEYPAIR_FILE: mixed }, KEYS).problems).toEqual([
      {
        variable: 'SOLANA_KEYPAIR_FILE',
        message: 'holds 64 bytes whose public half does not match the secret half',
      },
    ]);
    const short = join(dir, 'short.json');
    writeFileSync(short, JSON.stringify([...keypair.subarray(0, 32)]));
    expect(problemsOf({ SOLANA_KEYPAIR_FILE: short }, KEYS).problems[0]?.message).toBe(
      'must hold a solana-keygen JSON array of 64 bytes',
    );
    expect(
      problemsOf(
        {
          SOLANA_PRIVATE_KEY: encodeBase58(
            Uint8Array.from([...keypair.subarray(0, 32), ...other.subarray(32)]),
          ),
        },
        KEYS,
      ).problems,
    ).toEqual([
      {
        variable: 'SOLANA_PRIVATE_KEY',
        message: 'is 64 bytes whose public half does not match the secret half',
      },
    ]);
  });

  it('allows a zero fee cap but not a zero spend limit', () => {
    expect(loadConfig({ MAX_FEE_USDC: '0' }).maxFeeUsdc).toBe(0n);
    expect(problemsOf({ MAX_DAILY_USDC: '0' }).problems[0]?.variable).toBe('MAX_DAILY_USDC');
  });

  it('reads NEW_RECIPIENT_POLICY (allow by default) and NEW_RECIPIENT_MAX_USDC', () => {
    expect(loadConfig({})).toMatchObject({ newRecipientPolicy: 'allow', newRecipientMaxUsdc: undefined });
    expect(
      loadConfig({ NEW_RECIPIENT_POLICY: 'Hold', APPROVER_TOKEN: 'approver-token-0123456789' }),
    ).toMatchObject({
      newRecipientPolicy: 'hold',
    });
    expect(
      loadConfig({ NEW_RECIPIENT_MAX_USDC: '1000', APPROVER_TOKEN: 'approver-token-0123456789' })
        .newRecipientMaxUsdc,
    ).toBe(1_000_000_000n);
    expect(problemsOf({ NEW_RECIPIENT_POLICY: 'maybe', NEW_RECIPIENT_MAX_USDC: '-1' }).problems).toEqual([
      { variable: 'NEW_RECIPIENT_POLICY', message: 'must be one of allow, hold, reject' },
      { variable: 'NEW_RECIPIENT_MAX_USDC', message: expect.stringMatching(/^must be a USDC amount/) },
    ]);
  });

  it('makes hold, reject and NEW_RECIPIENT_MAX_USDC need an approver credential: whoever submits batches must not vouch for recipients', () => {
    for (const [setting, env] of [
      ['NEW_RECIPIENT_POLICY=hold', { NEW_RECIPIENT_POLICY: 'hold' }],
      ['NEW_RECIPIENT_POLICY=reject', { NEW_RECIPIENT_POLICY: 'reject' }],
      // Finding 4 of issue 33: with the cap and no approver, the hook token added to the book.
      ['NEW_RECIPIENT_MAX_USDC', { NEW_RECIPIENT_MAX_USDC: '500' }],
    ] as const) {
      const problems = problemsOf({ ...env, HOOK_TOKEN: 'hook-token-0123456789' }).problems;
      expect(problems).toEqual([
        { variable: 'APPROVER_TOKEN', message: expect.stringContaining(`is required with ${setting}`) },
      ]);
    }
  });

  it('refuses two tokens that are the same: two credentials never share a token', () => {
    expect(
      problemsOf({
        HOOK_TOKEN: 'same-token-0123456789',
        APPROVER_TOKEN: 'same-token-0123456789',
        METRICS_TOKEN: 'same-token-0123456789',
      }).problems,
    ).toEqual([
      {
        variable: 'APPROVER_TOKEN',
        message: 'must differ from HOOK_TOKEN: two credentials may not share a token',
      },
      {
        variable: 'METRICS_TOKEN',
        message: 'must differ from HOOK_TOKEN: two credentials may not share a token',
      },
    ]);
  });
});

describe('what each command needs', () => {
  it('lets enqueue run with no service URL and no keys', () => {
    expect(() => loadConfig({})).not.toThrow();
  });

  // Issue 33: this was "still refuses a malformed key for a command that does not need it". Keys stay
  // in the worker: a command that does not sign ignores every key setting, malformed or unreadable.
  it('ignores every key setting in a command that does not sign, malformed or unreadable', () => {
    const config = loadConfig({
      EVM_PRIVATE_KEY: 'nope',
      SOLANA_PRIVATE_KEY: 'nope',
      EVM_KEYSTORE_FILE: '/secrets/missing.json',
      EVM_KEYSTORE_PASSWORD_FILE: '/secrets/missing',
      SOLANA_KEYPAIR_FILE: '/dev/zero',
    });
    expect(config.evmPrivateKeys).toEqual([]);
    expect(config.solanaSecretKey).toBeUndefined();
    expect(config.evmOwnerAddresses).toEqual([]);
    expect(problemsOf({ EVM_PRIVATE_KEY: 'nope' }, KEYS).problems.map((p) => p.variable)).toEqual([
      'EVM_PRIVATE_KEY',
    ]);
  });

  it('refuses a command that needs a signing key but gives no key reader (a programming error)', () => {
    expect(() => loadConfig({}, { signingKey: true })).toThrow(/must give `keys`/);
  });

  it('makes the worker ask for the service URL and key and at least one signing key, naming both', () => {
    const err = problemsOf({}, { service: true, signingKey: true, ...KEYS });
    expect(err.problems.map((p) => p.variable)).toEqual([
      'TRANSFER_API_URL',
      'TRANSFER_API_KEY',
      'EVM_PRIVATE_KEY / SOLANA_KEYPAIR_FILE',
    ]);
    expect(err.problems[2]?.message).toContain('SOLANA_PRIVATE_KEY');
    expect(err.problems[2]?.message).toContain('EVM_PRIVATE_KEY_FILE');
  });

  it('makes a worker with an EVM key ask for the permit spender', () => {
    const err = problemsOf(
      { TRANSFER_API_URL: 'http://127.0.0.1:8787', TRANSFER_API_KEY: API_KEY, EVM_PRIVATE_KEY: EVM_KEY },
      { service: true, signingKey: true, ...KEYS },
    );
    expect(err.problems.map((p) => p.variable)).toEqual(['PERMIT_SPENDER']);
  });

  it('lets a worker take only the source chains it holds keys and spenders for', () => {
    const service = { TRANSFER_API_URL: 'http://127.0.0.1:8787', TRANSFER_API_KEY: API_KEY };
    const needs = { service: true, signingKey: true, ...KEYS };
    const solanaOnly = loadConfig({ ...service, SOLANA_PRIVATE_KEY: encodeBase58(solanaKeypair()) }, needs);
    expect(workerSourceChains(solanaOnly)).toEqual(['SOLANA']);

    const evmAll = loadConfig({ ...service, EVM_PRIVATE_KEY: EVM_KEY, PERMIT_SPENDER: SPENDER }, needs);
    expect(workerSourceChains(evmAll)).toEqual(['ETH', 'BASE', 'ARB', 'POLYGON']);

    const baseOnly = loadConfig(
      {
        ...service,
        EVM_PRIVATE_KEY: EVM_KEY,
        PERMIT_SPENDER_BASE: SPENDER_BASE,
        SOLANA_PRIVATE_KEY: encodeBase58(solanaKeypair()),
      },
      needs,
    );
    expect(workerSourceChains(baseOnly)).toEqual(['BASE', 'SOLANA']);
  });

  it('makes serve ask for a credential: ACCESS_FILE, or one of the three tokens', () => {
    expect(problemsOf({}, { access: true }).problems).toEqual([
      {
        variable: 'HOOK_TOKEN',
        message: expect.stringContaining(
          'is required to authenticate HTTP requests (or APPROVER_TOKEN, METRICS_TOKEN; or ACCESS_FILE',
        ),
        missing: true,
      },
    ]);
    expect(loadConfig({ METRICS_TOKEN: 'metrics-token-0123456789' }, { access: true }).credentials).toEqual([
      { name: 'metrics', roles: ['metrics'], sha256: tokenDigest('metrics-token-0123456789') },
    ]);
  });

  it('refuses tokens and secrets under 16 characters, saying how to make one, never echoing them', () => {
    const err = problemsOf({
      HOOK_TOKEN: 'ab',
      APPROVER_TOKEN: '0123456789abcde',
      HOOK_HMAC_SECRET: 'x',
    });
    const hint = 'is shorter than 16 characters: use a random one, e.g. `openssl rand -hex 32`';
    expect(err.problems).toEqual([
      { variable: 'HOOK_HMAC_SECRET', message: hint },
      { variable: 'HOOK_TOKEN', message: hint },
      { variable: 'APPROVER_TOKEN', message: hint },
    ]);
    expect(JSON.stringify(err.problems)).not.toContain('0123456789abcde');
    expect(
      loadConfig({
        HOOK_TOKEN: '0123456789abcdef',
        HOOK_HMAC_SECRET: 'fedcba9876543210',
      }).credentials.map((c) => c.sha256),
    ).toEqual([tokenDigest('0123456789abcdef')]);
  });
});

describe('readEnv', () => {
  it('reads .env from the working directory, with the process environment winning', () => {
    const cwd = mkdtempSync(join(dir, 'env-'));
    writeFileSync(
      join(cwd, '.env'),
      '# a comment\nQUEUE_PREFIX=fromfile\nNETWORK=mainnet\nLOG_LEVEL="warn"\nHTTP_PORT=1234\n',
    );
    const env = readEnv({ QUEUE_PREFIX: 'fromprocess', HTTP_PORT: '4321' }, cwd);
    const config = loadConfig(env);
    expect(config.queuePrefix).toBe('fromprocess');
    expect(config.httpPort).toBe(4321);
    expect(config.network).toBe('mainnet');
    expect(config.logLevel).toBe('warn');
  });

  it('works without a .env file', () => {
    expect(readEnv({ A: '1' }, mkdtempSync(join(dir, 'none-')))).toEqual({ A: '1' });
  });
});
