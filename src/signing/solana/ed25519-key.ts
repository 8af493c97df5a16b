import { createPrivateKey, createPublicKey, sign, type KeyObject } from 'node:crypto';
import { encodeBase58 } from '../../domain/base58.ts';

/*
 * Our Solana key as a Node.js KeyObject, and Ed25519 signatures made with it synchronously.
 *
 * @solana/kit signs through WebCrypto: every signature is a promise resolved on the thread pool,
 * and its partiallySignTransaction also derives the signer's address from the public key (a key
 * export) on every call: ~250 µs of CPU a transaction, where node:crypto's `sign(null, message,
 * key)` takes ~55 µs (BENCHMARKS.md §2) for the same Ed25519 signature (deterministic, RFC 8032),
 * made in the calling thread.
 */

/** PKCS#8 DER of an Ed25519 private key, up to its 32-byte seed (RFC 8410). */
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
/** SPKI DER of an Ed25519 public key, up to its 32 bytes. */
const SPKI_ED25519_PREFIX_LENGTH = 12;

export type Ed25519Key = {
  /** The private key; its bytes stay inside the KeyObject. */
  readonly privateKey: KeyObject;
  /** The public key in base58: the Solana address. */
  readonly address: string;
};

/**
 * The key of a solana-keygen keypair (64 bytes: the secret seed, then its public key). Throws when
 * the bytes are not such a keypair, or the public half is not the seed's.
 */
export function importEd25519Keypair(keypair: Uint8Array): Ed25519Key {
  if (keypair.length !== 64) throw new Error('a Solana keypair is 64 bytes');
  const der = Buffer.concat([PKCS8_ED25519_PREFIX, keypair.subarray(0, 32)]);
  const privateKey = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
  der.fill(0);
  const spki = createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  const publicKey = new Uint8Array(spki.subarray(SPKI_ED25519_PREFIX_LENGTH));
  if (!Buffer.from(publicKey).equals(Buffer.from(keypair.subarray(32)))) {
    throw new Error("the keypair's public half is not its secret's");
  }
  return { privateKey, address: encodeBase58(publicKey) };
}

/** The Ed25519 signature (64 bytes) of `message` by `key`. */
export function signEd25519(key: Ed25519Key, message: Uint8Array): Uint8Array {
  return new Uint8Array(sign(null, message, key.privateKey));
}
