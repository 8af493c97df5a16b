import { Secret } from './config.ts';
import type { Problem } from './env-reader.ts';
import { readKeyFile } from './key-file.ts';
import { warnIfKeyFileExposed } from './key-file-mode.ts';
import type { SigningKeyReader } from './signing-key-reader.ts';

/*
 * EVM_KEYSTORE_FILE and EVM_KEYSTORE_PASSWORD_FILE as the worker reads them: the files (regular,
 * at most 64 KiB, src/config/key-file.ts), each opened with the password by src/signing (the
 * SigningKeyReader the worker gives). A problem names the variable and the file, never the
 * password or any byte of a key.
 */

const BOM = '\uFEFF';

/**
 * The password: the first line of the file, without a UTF-8 BOM before it or the line break (LF or
 * CRLF) after it — what editors on every system leave there.
 */
export function passwordOf(text: string): string {
  const body = text.startsWith(BOM) ? text.slice(BOM.length) : text;
  return (body.split('\n')[0] ?? '').replace(/\r$/, '');
}

function readPassword(file: string, problem: Problem): string | undefined {
  const read = readKeyFile(file);
  if (!read.ok) {
    problem('EVM_KEYSTORE_PASSWORD_FILE', `${file} ${read.reason}`);
    return undefined;
  }
  warnIfKeyFileExposed('EVM_KEYSTORE_PASSWORD_FILE', file, { mode: read.mode, kind: 'a password file' });
  return passwordOf(read.text);
}

/**
 * The owners' private keys from EVM_KEYSTORE_FILE (comma-separated files, in that order), each
 * opened with EVM_KEYSTORE_PASSWORD_FILE's password. Every file's problem is reported, naming the
 * file; any problem leaves no key at all (a treasury half-loaded is not started).
 */
export function readEvmKeystores(
  files: readonly string[],
  passwordFile: string | undefined,
  reader: SigningKeyReader,
  problem: Problem,
): Secret[] {
  if (passwordFile === undefined) {
    problem(
      'EVM_KEYSTORE_PASSWORD_FILE',
      "is required with EVM_KEYSTORE_FILE: a file whose first line is the keystores' password",
    );
    return [];
  }
  const password = readPassword(passwordFile, problem);
  if (password === undefined) return [];
  const keys: Secret[] = [];
  const owners = new Map<string, string>();
  let failed = false;
  for (const file of files) {
    const read = readKeyFile(file);
    if (!read.ok) {
      problem('EVM_KEYSTORE_FILE', `${file} ${read.reason}`);
      failed = true;
      continue;
    }
    warnIfKeyFileExposed('EVM_KEYSTORE_FILE', file, { mode: read.mode, kind: 'a keystore file' });
    const opened = reader.openKeystore(read.text, password);
    if (!opened.ok) {
      problem('EVM_KEYSTORE_FILE', `${file} ${opened.reason}`);
      failed = true;
      continue;
    }
    const earlier = owners.get(opened.address);
    if (earlier !== undefined) {
      problem('EVM_KEYSTORE_FILE', `${file} holds the same owner as ${earlier} (each owner once)`);
      failed = true;
      continue;
    }
    owners.set(opened.address, file);
    keys.push(new Secret(opened.privateKey));
  }
  return failed ? [] : keys;
}
