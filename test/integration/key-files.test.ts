import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, type CliResult } from '../helpers/cli.ts';
import { TEST_EVM_KEY } from '../helpers/fixtures.ts';
import { v3Keystore } from '../helpers/v3-keystore.ts';

/*
 * Key files as the worker reads them (docs/keys.md, issue 33): key files,
 * keystores and password files must be regular files of at most 64 KiB. `/dev/zero` (which grew the
 * worker to 9 GB), a FIFO (which hung it silently), a directory and a file over 64 KiB each get a
 * one-line configuration error naming the variable. The worker runs as a user runs it, a process
 * of its own, here under a 3 GiB address-space limit (`ulimit -v`): a read that grows without bound
 * aborts it instead of returning exit 2. A keystore asking for a key derivation costlier than four
 * times geth's standard is refused, naming the file, before any derivation runs.
 */

const dir = mkdtempSync(join(tmpdir(), 'usdc-key-files-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PASSWORD = 'a password that is never printed 4f1c';
const fifo = join(dir, 'a-fifo');
execFileSync('mkfifo', [fifo]);
const directory = join(dir, 'a-directory');
mkdirSync(directory);
const large = join(dir, 'large');
writeFileSync(large, `${'0'.repeat(64 * 1024)}\n`, { mode: 0o600 });
const keystore = join(dir, 'owner.json');
writeFileSync(keystore, JSON.stringify(v3Keystore(TEST_EVM_KEY as `0x${string}`, PASSWORD)), { mode: 0o600 });
const passwordFile = join(dir, 'password');
writeFileSync(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });

/** What the worker needs besides a key, valid, so that the key file is the only problem. */
const SERVICE = {
  TRANSFER_API_URL: 'http://127.0.0.1:9',
  TRANSFER_API_KEY: 'sk_test_0123456789abcdef',
  PERMIT_SPENDER: '0x000000000000000000000000000000000000dEaD',
};

/** Runs `usdc-batch worker` with only `env`, in `dir`, under an address-space limit; killed after 60 s. */
function runWorkerBounded(env: Record<string, string>): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'sh',
      ['-c', 'ulimit -v 3145728 && exec "$0" "$@"', process.execPath, BIN, 'worker'],
      {
        cwd: dir,
        env: { PATH: process.env['PATH'] ?? '', HOME: dir, LOG_LEVEL: 'warn', ...SERVICE, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const problemLines = (text: string) => text.split('\n').filter((l) => /^ {2}- [A-Z_ /]+: /.test(l));

/** Each key setting, and the environment that makes the file under test the only thing wrong. */
const SETTINGS: Record<string, (file: string) => Record<string, string>> = {
  EVM_PRIVATE_KEY_FILE: (file) => ({ EVM_PRIVATE_KEY_FILE: file }),
  SOLANA_KEYPAIR_FILE: (file) => ({ SOLANA_KEYPAIR_FILE: file }),
  EVM_KEYSTORE_FILE: (file) => ({ EVM_KEYSTORE_FILE: file, EVM_KEYSTORE_PASSWORD_FILE: passwordFile }),
  EVM_KEYSTORE_PASSWORD_FILE: (file) => ({ EVM_KEYSTORE_FILE: keystore, EVM_KEYSTORE_PASSWORD_FILE: file }),
};

const NOT_KEY_FILES: [string, string, string][] = [
  ['/dev/zero', '/dev/zero', '/dev/zero is a character device, not a regular file'],
  ['a FIFO', fifo, `${fifo} is a FIFO (named pipe), not a regular file`],
  ['a directory', directory, `${directory} is a directory, not a regular file`],
  ['a file over 64 KiB', large, `${large} is larger than 64 KiB, too large for a key or password file`],
];

describe.each(Object.keys(SETTINGS))('worker: %s that is not a key file', (variable) => {
  it.each(NOT_KEY_FILES)(
    '%s is one line naming the variable, and the worker returns (exit 2)',
    async (_, file, message) => {
      const r = await runWorkerBounded((SETTINGS[variable] as (f: string) => Record<string, string>)(file));
      expect(r.code, r.stderr).toBe(2);
      expect(problemLines(r.stderr)).toEqual([`  - ${variable}: ${message}`]);
      expect(r.stdout + r.stderr).not.toContain(PASSWORD);
    },
  );
});

/** A V3 keystore whose kdfparams ask for `kdf`: never opened (refused before any derivation). */
function craftedKeystore(kdf: 'scrypt' | 'pbkdf2', params: Record<string, number | string>): string {
  const path = join(dir, `crafted-${kdf}-${Object.values(params).join('-')}.json`);
  const real = v3Keystore(TEST_EVM_KEY as `0x${string}`, PASSWORD);
  const kdfparams = { dklen: 32, salt: real.crypto.kdfparams.salt, ...params };
  writeFileSync(path, JSON.stringify({ ...real, crypto: { ...real.crypto, kdf, kdfparams } }), {
    mode: 0o600,
  });
  return path;
}

describe('worker: a keystore asking for a key derivation above four times geth’s standard', () => {
  const COST = 'asks for a key derivation above four times geth’s standard';
  it.each([
    // Ran for minutes without a word.
    ['scrypt n = 2^17, r = 63, p = 64', craftedKeystore('scrypt', { n: 2 ** 17, r: 63, p: 64 })],
    // Said "wrong password".
    ['scrypt n = 2^20, r = 64, p = 1', craftedKeystore('scrypt', { n: 2 ** 20, r: 64, p: 1 })],
    ['scrypt n = 2^21, r = 8, p = 1', craftedKeystore('scrypt', { n: 2 ** 21, r: 8, p: 1 })],
    ['pbkdf2 of 1,048,577 rounds', craftedKeystore('pbkdf2', { c: 4 * 262_144 + 1, prf: 'hmac-sha256' })],
  ])('%s is refused, naming the file (exit 2)', async (_, file) => {
    const r = await runWorkerBounded({ EVM_KEYSTORE_FILE: file, EVM_KEYSTORE_PASSWORD_FILE: passwordFile });
    expect(r.code, r.stderr).toBe(2);
    const lines = problemLines(r.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^ {2}- EVM_KEYSTORE_FILE: ${file} ${COST} \\(`));
  });
});
