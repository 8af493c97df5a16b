import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EVM_CHAINS } from '../../domain/chains.ts';
import { ValidationError } from '../../domain/errors.ts';
import type { Sandbox, SandboxOptions } from '../../sandbox/sandbox.ts';
import { EXIT } from '../exit-codes.ts';
import { endOnSignals, holdUntilExit, removeOnExit } from '../lifetime.ts';
import { startPrivateRedis, type PrivateRedis } from '../private-redis.ts';
import {
  assertEnvFileFree,
  assertMetricsTokenFileFree,
  removeMetricsTokenFile,
  removeSandboxEnvFile,
  throwawayKeyLines,
  throwawayToken,
  writeMetricsTokenFile,
  writeSandboxEnvFile,
} from '../sandbox-env.ts';
import { loadSandboxModule } from '../sandbox-packages.ts';
import { makeThrowawayKeys } from '../throwaway-keys.ts';
import { parseOptions } from '../options.ts';

function whole(name: string, value: unknown, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const text = String(value);
  if (!/^[0-9]+$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new ValidationError(
      'USDC_USAGE_INVALID_OPTION',
      `--${name} must be a whole number from ${min} to ${max}`,
    );
  }
  return Number(text);
}

/** What a worker needs to use the sandbox, as `NAME=value` lines (no secret: the relayer's key stays inside). */
export function sandboxEnvLines(sandbox: Sandbox): string[] {
  return [
    `TRANSFER_API_URL=${sandbox.url}`,
    `TRANSFER_API_KEY=${sandbox.apiKey}`,
    `NETWORK=${sandbox.network}`,
    `PERMIT_SPENDER=${sandbox.spender}`,
    ...EVM_CHAINS.map((c) => `EVM_RPC_URL_${c}=${sandbox.rpcUrl(c)}`),
    `SOLANA_RPC_URL=${sandbox.rpcUrl('SOLANA')}`,
    `SOLANA_ALLOWED_DESTINATIONS=${sandbox.solanaDepositAccount}`,
    `CCTP_API_URL=${sandbox.url}/cctp`,
  ];
}

/**
 * `usdc-batch sandbox`: runs the strict sandbox of the transfer service on local chains until
 * SIGINT/SIGTERM, then stops every anvil it started. Prints, on stdout, the environment a worker
 * needs to use it, with throwaway signing keys made for this run (files removed when it stops);
 * `--redis` also starts a private durable Redis, and `--write-env FILE` writes the environment (and
 * a throwaway HOOK_TOKEN and METRICS_TOKEN) where other terminals can source it;
 * `--metrics-token-file FILE` writes that METRICS_TOKEN alone, for a Prometheus (compose's
 * monitoring profile scrapes the sandbox profile's API with it).
 */
const SANDBOX_OPTIONS = {
  port: 'text',
  host: 'text',
  apiKey: 'text',
  network: 'text',
  latency: 'text',
  redis: 'flag',
  writeEnv: 'text',
  metricsTokenFile: 'text',
} as const;

export async function run(_args: string[], options: Record<string, unknown>): Promise<number> {
  const flags = parseOptions(SANDBOX_OPTIONS, options);
  const port = whole('port', flags.port, 0, 65_535);
  const latencyMs = whole('latency', flags.latency, 0, 600_000);
  if (flags.network === 'mainnet') {
    process.stderr.write(
      'error: the sandbox runs testnet chain ids only (--network mainnet is refused): a permit or transaction signed against it must never be valid on a real chain\n',
    );
    return EXIT.usage;
  }
  const opts: SandboxOptions = {
    ...(port !== undefined ? { port } : {}),
    ...(latencyMs !== undefined ? { latencyMs } : {}),
    ...(flags.host !== undefined ? { host: flags.host } : {}),
    ...(flags.apiKey !== undefined ? { apiKey: flags.apiKey } : {}),
  };
  const envFile = flags.writeEnv;
  const tokenFile = flags.metricsTokenFile;
  if (tokenFile && !envFile) {
    process.stderr.write(
      'error: --metrics-token-file needs --write-env FILE: the token is a credential of the serve that reads that file\n',
    );
    return EXIT.usage;
  }
  if (envFile) assertEnvFileFree(envFile);
  if (tokenFile) assertMetricsTokenFileFree(tokenFile);
  const metricsToken = throwawayToken();
  // Loaded here, not imported: a production install has no anvil or LiteSVM (exit 2, saying how to add them).
  const sandboxModule = await loadSandboxModule('sandbox');
  if (!sandboxModule) return EXIT.usage;
  const { createSandbox, SandboxNetworkError } = sandboxModule;
  const started = Date.now();
  // A signal while it starts ends it through this (cli/lifetime.ts): the anvils started so far are
  // killed as the process exits, the private Redis, the throwaway keys and the env file go here.
  let sandbox: Sandbox | undefined;
  let redis: PrivateRedis | undefined;
  // The throwaway keys' directory: removed whatever ends the sandbox.
  const dir = mkdtempSync(join(tmpdir(), 'usdc-batch-sandbox-'));
  const removeDir = removeOnExit(dir);
  const release = holdUntilExit(async () => {
    await sandbox?.close();
    await redis?.stop();
    if (envFile) removeSandboxEnvFile(envFile);
    if (tokenFile) removeMetricsTokenFile(tokenFile, metricsToken);
    removeDir();
  });
  const stopSignals = endOnSignals();
  try {
    sandbox = await createSandbox(opts);
  } catch (err) {
    stopSignals();
    await release();
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') {
      process.stderr.write(
        `error: port ${port ?? ''} is already in use: choose another with --port N (--port 0 takes a free one)\n`,
      );
      return EXIT.usage;
    }
    if (err instanceof SandboxNetworkError) {
      process.stderr.write(`error: ${err.message}\n`);
      return EXIT.usage;
    }
    throw err;
  }
  try {
    if (flags.redis) redis = await startPrivateRedis(dir);
    const env = [
      ...sandboxEnvLines(sandbox),
      ...(redis ? [`REDIS_URL=${redis.url}`] : []),
      ...throwawayKeyLines(makeThrowawayKeys(dir)),
    ];
    if (envFile) {
      writeSandboxEnvFile(envFile, [
        ...env,
        '# THROWAWAY tokens for `usdc-batch serve` against this sandbox (METRICS_TOKEN: /metrics and /readyz only)',
        `HOOK_TOKEN=${throwawayToken()}`,
        `METRICS_TOKEN=${metricsToken}`,
      ]);
    }
    if (tokenFile) writeMetricsTokenFile(tokenFile, metricsToken);
    process.stdout.write(`${startedLines(sandbox, started, env, redis, envFile, tokenFile).join('\n')}\n`);
    // Up: a signal now is its normal end (exit 0, after the orderly stop below).
    stopSignals();
    await untilSignal();
  } finally {
    stopSignals();
    await release();
  }
  process.stdout.write('sandbox stopped\n');
  return EXIT.ok;
}

/** What the sandbox says when it is up: where, the environment for a worker, the admin routes. */
function startedLines(
  sandbox: Sandbox,
  startedAt: number,
  env: readonly string[],
  redis: PrivateRedis | undefined,
  envFile: string | undefined,
  tokenFile: string | undefined,
): string[] {
  const anvils = EVM_CHAINS.map((c) => `${c} pid ${sandbox.nodes.evm[c].pid ?? '?'}`).join(', ');
  return [
    `usdc-batch sandbox (${sandbox.network}) listening on ${sandbox.url}, started in ${Date.now() - startedAt} ms`,
    `chains: anvil per EVM chain (${anvils}); Solana in LiteSVM (in this process)`,
    ...(redis ? [`redis: a private, durable redis-server at ${redis.url} (stops with the sandbox)`] : []),
    '',
    ...env,
    '',
    ...(envFile
      ? [
          `wrote these settings and throwaway HOOK_TOKEN and METRICS_TOKEN to ${envFile} (removed when the sandbox stops); in another terminal:`,
          `  set -a; . ${shellPath(envFile)}; set +a`,
          '',
        ]
      : []),
    ...(tokenFile
      ? [
          `wrote that METRICS_TOKEN alone to ${tokenFile}, readable by all (role metrics only), for a Prometheus`,
          '',
        ]
      : []),
    `solana fee payer: ${sandbox.solanaFeePayer}`,
    `cctp v2 attestation API (CCTP_API_URL): ${sandbox.cctp.apiUrl}; attester ${sandbox.cctp.attester}`,
    `admin (loopback only; usdc-batch sandbox --help says what each does): GET/POST ${sandbox.url}/__admin/config, GET /__admin/ledger, GET /__admin/balances?address=…, POST /__admin/balance, POST /__admin/reset, POST /__admin/bump-nonce, POST /__admin/outside-permit, GET/POST /__admin/native-balance, POST /__admin/blacklist|unblacklist, POST /__admin/freeze|thaw`,
    'press Ctrl-C to stop',
  ];
}

/** `./sandbox.env` for a bare file name (`.` needs a path to read a file of the working directory). */
function shellPath(file: string): string {
  return file.includes('/') ? file : `./${file}`;
}

async function untilSignal(): Promise<void> {
  const ac = new AbortController();
  await Promise.race([
    once(process, 'SIGINT', { signal: ac.signal }),
    once(process, 'SIGTERM', { signal: ac.signal }),
  ]).catch(() => {});
  ac.abort();
}
