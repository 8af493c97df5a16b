import * as Keystore from 'ox/Keystore';
import type { Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { KeystoreOpening, SigningKeyReader } from '../../config/signing-key-reader.ts';
import { evmAddressOfKey } from './owner-address.ts';

/*
 * The treasury's EVM keys at rest: Ethereum V3 keystore files (the Web3 Secret Storage definition:
 * scrypt or pbkdf2, aes-128-ctr, a keccak-256 MAC), as geth, Foundry's `cast wallet` and ethers
 * write them, opened with viem's own `ox` Keystore module. Only the worker opens them (docs/keys.md
 * ): the configuration reads the files (bounded, src/config/key-file.ts) and
 * hands their text here. A reason never holds the password or a byte of a key.
 */

/**
 * Four times geth's standard (scrypt n = 2^18, r = 8, p = 1; pbkdf2 262,144 rounds): a keystore
 * asking for more is refused before any derivation runs. scrypt's work grows with n·r·p and its
 * memory with 128·n·r bytes: at this bound at most 1 GiB, what @noble's scrypt allows by default.
 */
export const MAX_SCRYPT_COST = 4 * 2 ** 18 * 8;
export const MAX_PBKDF2_ROUNDS = 4 * 262_144;

const hexOf = (bytes: number) => new RegExp(`^(0x)?[0-9a-fA-F]{${bytes * 2}}$`);
const HEX = /^(0x)?([0-9a-fA-F]{2})+$/;
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v > 0;
const bare = (hex: string) => (hex.startsWith('0x') ? hex.slice(2) : hex).toLowerCase();

type Parsed = { ok: true; keystore: Keystore.Keystore } | { ok: false; reason: string };

const tooCostly = (what: string): Parsed => ({
  ok: false,
  reason: `asks for a key derivation above four times geth’s standard (${what}): re-encrypt it with geth’s standard parameters`,
});

/** The scrypt parameters, checked against the cost bound before anything is derived. */
function scryptParams(kdfparams: Record<string, unknown>): { n: number; r: number; p: number } | Parsed {
  const { n, r, p } = kdfparams;
  if (!isCount(n) || n < 2 || !Number.isInteger(Math.log2(n)) || !isCount(r) || !isCount(p))
    return {
      ok: false,
      reason: 'has scrypt parameters out of range (n a power of 2, r and p whole numbers)',
    };
  if (n * r * p > MAX_SCRYPT_COST)
    return tooCostly(`scrypt n·r·p = ${n}·${r}·${p} is over ${MAX_SCRYPT_COST} = 4·2^18·8`);
  return { n, r, p };
}

/**
 * The V3 keystore in `text`, normalised for ox (lower-case hex without 0x, `crypto` even where
 * old geth wrote `Crypto`), or why it is not one (a damaged or foreign file, or too costly to open).
 */
export function parseKeystore(text: string): Parsed {
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
    const params = scryptParams(kdfparams);
    if ('ok' in params) return params;
    return {
      ok: true,
      keystore: {
        id,
        version: 3,
        crypto: { ...common, kdf: 'scrypt', kdfparams: { dklen: 32, ...params, salt: bare(salt) } },
      },
    };
  }
  if (kdf === 'pbkdf2') {
    const { c, prf } = kdfparams;
    if (prf !== 'hmac-sha256') return { ok: false, reason: 'uses a pbkdf2 prf other than hmac-sha256' };
    if (!isCount(c)) return { ok: false, reason: 'has a pbkdf2 round count out of range' };
    if (c > MAX_PBKDF2_ROUNDS)
      return tooCostly(`pbkdf2 ${c} rounds is over ${MAX_PBKDF2_ROUNDS} = 4·262,144`);
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
export function openKeystore(text: string, password: string): KeystoreOpening {
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

/** What `worker` and `demo` give the configuration to read their keys (src/config/signing-key-reader.ts). */
export const signingKeys: SigningKeyReader = { openKeystore, evmAddressOf: evmAddressOfKey };
