import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
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
 * their public addresses for the commands that hold no key (README "Keys stay in the worker").
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

/** A random HOOK_TOKEN for `serve` against this sandbox, marked throwaway in its value. */
export function throwawayHookToken(): string {
  return `throwaway-${randomBytes(16).toString('hex')}`;
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
