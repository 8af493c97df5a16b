import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { UsdcBatchError } from '../domain/errors.ts';
import type { ThrowawayKeys } from './throwaway-keys.ts';

/*
 * The environment file `usdc-batch sandbox --write-env FILE` writes, so that a worker and `serve` in
 * other terminals run against it by `set -a; . ./FILE; set +a`. It holds throwaway credentials
 * (files of throwaway keys, a random HOOK_TOKEN) made for this one sandbox run, is readable by its
 * owner only, and is removed when the sandbox stops.
 */

/** The first line of every file this writes: a file without it is never overwritten or removed. */
const MARKER = '# written by usdc-batch sandbox:';

/**
 * `EVM_PRIVATE_KEY_FILE=…` and `SOLANA_KEYPAIR_FILE=…`, after a line saying they are throwaway, and
 * their public addresses for the commands that hold no key (docs/keys.md).
 */
export function throwawayKeyLines(keys: ThrowawayKeys): string[] {
  return [
    '# THROWAWAY keys made for this sandbox run (testnet chain ids only): never fund or reuse them',
    `EVM_PRIVATE_KEY_FILE=${keys.evmKeyFile}`,
    `SOLANA_KEYPAIR_FILE=${keys.solanaKeyFile}`,
    '# their public addresses, for serve, wallets and every command that holds no key',
    `EVM_OWNER_ADDRESSES=${keys.evmAddress}`,
    `SOLANA_ADDRESS=${keys.solanaAddress}`,
  ];
}

/** A random token (HOOK_TOKEN, METRICS_TOKEN) for `serve` against this sandbox, marked throwaway in its value. */
export function throwawayToken(): string {
  return `throwaway-${randomBytes(16).toString('hex')}`;
}

/**
 * Writes the sandbox's throwaway METRICS_TOKEN alone to `path`, for a Prometheus that runs as
 * another user (the compose monitoring profile's runs as `nobody`): readable by all (0644). It is a
 * credential of role metrics only — `/metrics` and `/readyz` of the sandbox's `serve`, nothing else.
 * Refuses a path that exists and was not written by a sandbox, as the env file does.
 */
export function writeMetricsTokenFile(path: string, token: string): void {
  assertMetricsTokenFileFree(path);
  const fd = openSync(path, 'w', 0o644);
  try {
    writeSync(fd, `${token}\n`);
  } finally {
    closeSync(fd);
  }
  chmodSync(path, 0o644);
}

/** A throwaway token on one line: what a metrics token file this command wrote holds. */
const TOKEN_FILE = /^throwaway-[0-9a-f]{32}\n$/;

/** Refuses (exit 2) a metrics token file that exists and is not a throwaway token a sandbox wrote. */
export function assertMetricsTokenFileFree(path: string): void {
  let text: string | undefined;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
  }
  if (text === undefined || !TOKEN_FILE.test(text)) {
    throw new UsdcBatchError(
      'USDC_SANDBOX_ENV_FILE_EXISTS',
      `${path} exists and was not written by usdc-batch sandbox: not overwriting it (choose another --metrics-token-file)`,
    );
  }
}

/** Removes the metrics token file if this sandbox's token is what it holds. */
export function removeMetricsTokenFile(path: string, token: string): void {
  try {
    if (readFileSync(path, 'utf8') === `${token}\n`) rmSync(path, { force: true });
  } catch {
    // Gone already.
  }
}

/**
 * Writes `lines` (NAME=value and comments) to `path`, mode 0600. Refuses a path that exists and was
 * not written by a sandbox: it may be someone's real configuration.
 */
export function writeSandboxEnvFile(path: string, lines: readonly string[]): void {
  assertEnvFileFree(path);
  const text = [
    `${MARKER} throwaway settings for one sandbox run; removed when it stops. Never use them for anything real.`,
    ...lines,
    '',
  ].join('\n');
  const fd = openSync(path, 'w', 0o600);
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
}

/** Refuses (exit 2) a path that exists and was not written by a sandbox: checked before anything starts. */
export function assertEnvFileFree(path: string): void {
  if (!writtenBySandbox(path) && exists(path)) {
    throw new UsdcBatchError(
      'USDC_SANDBOX_ENV_FILE_EXISTS',
      `${path} exists and was not written by usdc-batch sandbox: not overwriting it (choose another --write-env)`,
    );
  }
}

/** Removes the file if a sandbox wrote it (and nobody has replaced it since). */
export function removeSandboxEnvFile(path: string): void {
  if (writtenBySandbox(path)) rmSync(path, { force: true });
}

function writtenBySandbox(path: string): boolean {
  try {
    return readFileSync(path, 'utf8').startsWith(MARKER);
  } catch {
    return false;
  }
}

function exists(path: string): boolean {
  try {
    readFileSync(path);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}
