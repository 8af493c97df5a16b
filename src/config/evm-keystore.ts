import { readFileSync } from 'node:fs';
import * as Keystore from 'ox/Keystore';
import type { Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';

/*
 * The treasury's EVM keys at rest: Ethereum V3 keystore files (the Web3 Secret Storage definition:
 * scrypt or pbkdf2, aes-128-ctr, a keccak-256 MAC), as geth, Foundry's `cast wallet` and ethers
 * write them, opened with the password in the first line of EVM_KEYSTORE_PASSWORD_FILE. Decrypted
 * with viem's own `ox` Keystore module. A problem names the variable and the file, never the
 * password or any byte of a key.
 */

type Problem = (variable: string, message: string) => void;

/** What a keystore may ask of the key derivation: scrypt up to N = 2^20 (geth's "standard" is 2^18). */
const MAX_SCRYPT_N = 2 ** 20;
const MAX_PBKDF2_ROUNDS = 10_000_000;

const hexOf = (bytes: number) => new RegExp(`^(0x)?[0-9a-fA-F]{${bytes * 2}}$`);
const HEX = /^(0x)?([0-9a-fA-F]{2})+$/;
const isCount = (v: unknown, max: number): v is number =>
  typeof v === 'number' && Number.isInteger(v) && v > 0 && v <= max;
const bare = (hex: string) => (hex.startsWith('0x') ? hex.slice(2) : hex).toLowerCase();

/**
 * The V3 keystore in `text`, normalised for ox (lower-case hex without 0x, `crypto` even where
 * old geth wrote `Crypto`), or why it is not one (a damaged or foreign file).
 */
export function parseKeystore(
  text: string,
): { ok: true; keystore: Keystore.Keystore } | { ok: false; reason: string } {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'is not JSON' };
  }
  if (typeof json !== 'object' || json === null) return { ok: false, reason: 'is not a keystore object' };
  const doc = json as Record<string, unknown>;
  if (doc['version'] !== 3) return { ok: false, reason: 'is not a version 3 keystore' };
  const crypto = (doc['crypto'] ?? doc['Crypto']) as Record<string, unknown> | undefined;
  if (typeof crypto !== 'object' || crypto === null) return { ok: false, reason: 'has no crypto section' };
  if (crypto['cipher'] !== 'aes-128-ctr')
    return { ok: false, reason: 'uses a cipher other than aes-128-ctr' };
  const iv = (crypto['cipherparams'] as Record<string, unknown> | undefined)?.['iv'];
  const { ciphertext, mac, kdf } = crypto;
  const kdfparams = crypto['kdfparams'] as Record<string, unknown> | undefined;
  if (typeof iv !== 'string' || !hexOf(16).test(iv)) return { ok: false, reason: 'has no 16-byte iv' };
  if (typeof ciphertext !== 'string' || !hexOf(32).test(ciphertext))
    return { ok: false, reason: 'has no 32-byte ciphertext' };
  if (typeof mac !== 'string' || !hexOf(32).test(mac)) return { ok: false, reason: 'has no 32-byte mac' };
  if (typeof kdfparams !== 'object' || kdfparams === null) return { ok: false, reason: 'has no kdfparams' };
  const salt = kdfparams['salt'];
  if (typeof salt !== 'string' || !HEX.test(salt)) return { ok: false, reason: 'has no hex salt' };
  if (kdfparams['dklen'] !== 32) return { ok: false, reason: 'derives a key of other than 32 bytes (dklen)' };
  const common = {
    cipher: 'aes-128-ctr' as const,
    ciphertext: bare(ciphertext),
    cipherparams: { iv: bare(iv) },
    mac: bare(mac),
  };
  const id = typeof doc['id'] === 'string' ? doc['id'] : '';
  if (kdf === 'scrypt') {
    const { n, r, p } = kdfparams;
    if (!isCount(n, MAX_SCRYPT_N) || n < 2 || (n & (n - 1)) !== 0 || !isCount(r, 64) || !isCount(p, 64))
      return {
        ok: false,
        reason: `has scrypt parameters out of range (n a power of 2 up to ${MAX_SCRYPT_N})`,
      };
    return {
      ok: true,
      keystore: {
        id,
        version: 3,
        crypto: { ...common, kdf: 'scrypt', kdfparams: { dklen: 32, n, r, p, salt: bare(salt) } },
      },
    };
  }
  if (kdf === 'pbkdf2') {
    const { c, prf } = kdfparams;
    if (prf !== 'hmac-sha256') return { ok: false, reason: 'uses a pbkdf2 prf other than hmac-sha256' };
    if (!isCount(c, MAX_PBKDF2_ROUNDS)) return { ok: false, reason: 'has a pbkdf2 round count out of range' };
    return {
      ok: true,
      keystore: {
        id,
        version: 3,
        crypto: { ...common, kdf: 'pbkdf2', kdfparams: { dklen: 32, c, prf, salt: bare(salt) } },
      },
    };
  }
  return { ok: false, reason: 'uses a key derivation other than scrypt or pbkdf2' };
}

/** The keystore's own `address` field, when it has a well-formed one (geth and Foundry write it). */
function declaredAddress(text: string): string | undefined {
  const address = (JSON.parse(text) as Record<string, unknown>)['address'];
  return typeof address === 'string' && hexOf(20).test(address) ? bare(address) : undefined;
}

/** The private key in a keystore file opened with `password`, or why it could not be. */
export function openKeystore(
  text: string,
  password: string,
): { ok: true; privateKey: Hex; address: string } | { ok: false; reason: string } {
  const parsed = parseKeystore(text);
  if (!parsed.ok) return parsed;
  let privateKey: Hex;
  try {
    const key = Keystore.toKey(parsed.keystore, { password });
    privateKey = Keystore.decrypt(parsed.keystore, key);
  } catch {
    // ox checks the MAC before decrypting: a wrong password and a damaged ciphertext look alike.
    return { ok: false, reason: 'does not open with the password (a wrong password, or a damaged file)' };
  }
  let address: string;
  try {
    address = privateKeyToAccount(privateKey).address;
  } catch {
    return { ok: false, reason: 'holds no valid secp256k1 private key' };
  }
  const declared = declaredAddress(text);
  if (declared !== undefined && declared !== bare(address))
    return { ok: false, reason: 'holds a key whose address is not the one its address field names' };
  return { ok: true, privateKey, address };
}

/** The password: the first line of the file (its line break, LF or CRLF, is not part of it). */
function readPassword(file: string, problem: Problem): string | undefined {
  try {
    return readFileSync(file, 'utf8').split('\n')[0]?.replace(/\r$/, '') ?? '';
  } catch (err) {
    problem(
      'EVM_KEYSTORE_PASSWORD_FILE',
      `${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    );
    return undefined;
  }
}

/**
 * The owners' private keys from EVM_KEYSTORE_FILE (comma-separated files, in that order), each
 * opened with EVM_KEYSTORE_PASSWORD_FILE's password. Every file's problem is reported, naming the
 * file; any problem leaves no key at all (a treasury half-loaded is not started).
 */
export function readEvmKeystores(
  files: readonly string[],
  passwordFile: string | undefined,
  problem: Problem,
): Hex[] {
  if (passwordFile === undefined) {
    problem(
      'EVM_KEYSTORE_PASSWORD_FILE',
      "is required with EVM_KEYSTORE_FILE: a file whose first line is the keystores' password",
    );
    return [];
  }
  const password = readPassword(passwordFile, problem);
  if (password === undefined) return [];
  const keys: Hex[] = [];
  const owners = new Map<string, string>();
  let failed = false;
  for (const file of files) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      problem(
        'EVM_KEYSTORE_FILE',
        `${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      );
      failed = true;
      continue;
    }
    const opened = openKeystore(text, password);
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
    keys.push(opened.privateKey);
  }
  return failed ? [] : keys;
}
