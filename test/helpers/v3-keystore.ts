import { createCipheriv, pbkdf2Sync, randomBytes, randomUUID, scryptSync } from 'node:crypto';
import { keccak_256 } from '@noble/hashes/sha3';
import { privateKeyToAccount } from 'viem/accounts';

/*
 * A V3 keystore written by another implementation than the one the product reads with (ox, on
 * @noble's scrypt and AES): OpenSSL's scrypt, PBKDF2 and AES-128-CTR through node:crypto, the MAC
 * keccak-256(derivedKey[16..32] ++ ciphertext) as the Web3 Secret Storage definition gives it.
 */

export type KeystoreKdf = { kdf: 'scrypt'; n: number; r: number; p: number } | { kdf: 'pbkdf2'; c: number };

/** A light scrypt (fast in tests; real keystores use n = 2^18). */
export const LIGHT_SCRYPT: KeystoreKdf = { kdf: 'scrypt', n: 4096, r: 8, p: 1 };

export function v3Keystore(privateKey: `0x${string}`, password: string, params: KeystoreKdf = LIGHT_SCRYPT) {
  const salt = randomBytes(32);
  const iv = randomBytes(16);
  const derived =
    params.kdf === 'scrypt'
      ? scryptSync(password, salt, 32, { N: params.n, r: params.r, p: params.p, maxmem: 512 * 1024 * 1024 })
      : pbkdf2Sync(password, salt, params.c, 32, 'sha256');
  const cipher = createCipheriv('aes-128-ctr', derived.subarray(0, 16), iv);
  const ciphertext = Buffer.concat([cipher.update(Buffer.from(privateKey.slice(2), 'hex')), cipher.final()]);
  const mac = Buffer.from(keccak_256(Buffer.concat([derived.subarray(16, 32), ciphertext])));
  const kdfparams =
    params.kdf === 'scrypt'
      ? { dklen: 32, n: params.n, r: params.r, p: params.p, salt: salt.toString('hex') }
      : { dklen: 32, c: params.c, prf: 'hmac-sha256', salt: salt.toString('hex') };
  return {
    address: privateKeyToAccount(privateKey).address.slice(2).toLowerCase(),
    crypto: {
      cipher: 'aes-128-ctr',
      ciphertext: ciphertext.toString('hex'),
      cipherparams: { iv: iv.toString('hex') },
      kdf: params.kdf,
      kdfparams,
      mac: mac.toString('hex'),
    },
    id: randomUUID(),
    version: 3,
  };
}
