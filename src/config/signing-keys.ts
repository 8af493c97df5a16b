/**
 * Signing keys read from the environment, by the worker only (docs/keys.md):
 * the treasury's EVM keys (inline, key file or keystores) and the Solana key.
 */
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { decodeBase58 } from '../domain/base58.ts';
import type { EnvReader, Problem } from './env-reader.ts';
import { Secret } from './config.ts';
import { readKeyFile } from './key-file.ts';
import { warnIfKeyFileExposed } from './key-file-mode.ts';
import { readEvmKeystores } from './keystore-files.ts';
import type { SigningKeyReader } from './signing-key-reader.ts';

// secp256k1's group order: a private key must be in [1, n - 1].
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
// PKCS#8 DER header of an Ed25519 private key, followed by its 32-byte seed.
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/**
 * The Solana secret key stays a Uint8Array (what the signing layer takes), but prints like a
 * Secret: `JSON.stringify`, `util.inspect` and loggers show "[secret]", never the bytes.
 */
function hiddenBytes(bytes: Uint8Array): Uint8Array {
  const hide = () => '[secret]';
  Object.defineProperty(bytes, 'toJSON', { value: hide });
  Object.defineProperty(bytes, Symbol.for('nodejs.util.inspect.custom'), { value: hide });
  return bytes;
}

/**
 * A solana-keygen secret key is seed ‖ public key. A mismatched pair (two keys pasted together, a
 * truncated copy) would sign as another address than the one we report, so it is refused here.
 */
function isConsistentSolanaKeypair(bytes: Uint8Array): boolean {
  try {
    const key = createPrivateKey({
      key: Buffer.concat([ED25519_PKCS8_PREFIX, bytes.subarray(0, 32)]),
      format: 'der',
      type: 'pkcs8',
    });
    const spki = createPublicKey(key).export({ format: 'der', type: 'spki' });
    return Buffer.from(spki.subarray(spki.length - 32)).equals(Buffer.from(bytes.subarray(32, 64)));
  } catch {
    return false;
  }
}

/**
 * The treasury's EVM keys: 32 bytes hex each, with or without 0x; several comma-separated in
 * EVM_PRIVATE_KEY, or one per line (commas allowed too) in EVM_PRIVATE_KEY_FILE. Only commas and
 * line breaks separate keys (a space inside a line is part of a malformed key, not a separator).
 * A problem names the key by its position, never by its text.
 */
export function readEvmKeys(r: EnvReader, problem: Problem, reader: SigningKeyReader): readonly Secret[] {
  const keystores = r.list('EVM_KEYSTORE_FILE');
  if (keystores !== undefined && keystores.length > 0) {
    if (r.str('EVM_PRIVATE_KEY') !== undefined || r.str('EVM_PRIVATE_KEY_FILE') !== undefined) {
      problem(
        'EVM_KEYSTORE_FILE',
        'set exactly one of EVM_PRIVATE_KEY, EVM_PRIVATE_KEY_FILE, EVM_KEYSTORE_FILE',
      );
      return [];
    }
    return Object.freeze(readEvmKeystores(keystores, r.str('EVM_KEYSTORE_PASSWORD_FILE'), reader, problem));
  }
  if (r.str('EVM_KEYSTORE_PASSWORD_FILE') !== undefined) {
    problem('EVM_KEYSTORE_PASSWORD_FILE', 'is set without EVM_KEYSTORE_FILE (the keystores it opens)');
  }
  const keyFile = r.str('EVM_PRIVATE_KEY_FILE');
  const text = evmKeyText(r, problem);
  if (text === undefined) return [];
  const name = keyFile ? 'EVM_PRIVATE_KEY_FILE' : 'EVM_PRIVATE_KEY';
  const parts = text
    .split(/[,\r\n]+/)
    .map((s) => s.trim())
    .filter(Boolean);
  if (parts.length === 0) {
    problem(name, 'must hold a 32-byte hex private key');
    return [];
  }
  const keys: Secret[] = [];
  const seen = new Map<string, number>();
  parts.forEach((part, i) => {
    const which = parts.length > 1 ? `key ${i + 1} of ${parts.length}` : 'the key';
    const hex = (part.startsWith('0x') ? part.slice(2) : part).toLowerCase();
    if (!/^[0-9a-f]{64}$/.test(hex) || BigInt(`0x${hex}`) === 0n || BigInt(`0x${hex}`) >= SECP256K1_N) {
      problem(
        name,
        parts.length > 1
          ? `${which} is not a 32-byte hex private key`
          : 'must hold a 32-byte hex private key',
      );
      return;
    }
    const earlier = seen.get(hex);
    if (earlier !== undefined) {
      problem(name, `${which} repeats key ${earlier + 1} (each owner once)`);
      return;
    }
    seen.set(hex, i);
    keys.push(new Secret(`0x${hex}`));
  });
  return keys.length === parts.length ? Object.freeze(keys) : [];
}

/** EVM_PRIVATE_KEY, or the content of EVM_PRIVATE_KEY_FILE (never both), trimmed. */
function evmKeyText(r: EnvReader, problem: Problem): string | undefined {
  const direct = r.str('EVM_PRIVATE_KEY');
  const file = r.str('EVM_PRIVATE_KEY_FILE');
  if (direct !== undefined && file !== undefined) {
    problem('EVM_PRIVATE_KEY', 'set either EVM_PRIVATE_KEY or EVM_PRIVATE_KEY_FILE, not both');
    return undefined;
  }
  if (file === undefined) return direct;
  const read = readKeyFile(file);
  if (!read.ok) {
    problem('EVM_PRIVATE_KEY_FILE', `${file} ${read.reason}`);
    return undefined;
  }
  warnIfKeyFileExposed('EVM_PRIVATE_KEY_FILE', file, { mode: read.mode });
  return read.text.trim();
}

/** The Solana key: a solana-keygen JSON file (64-byte array), or a base58 secret. */
export function readSolanaKey(r: EnvReader, problem: Problem): Uint8Array | undefined {
  const file = r.str('SOLANA_KEYPAIR_FILE');
  const b58 = r.str('SOLANA_PRIVATE_KEY');
  if (file !== undefined && b58 !== undefined) {
    problem('SOLANA_PRIVATE_KEY', 'set either SOLANA_KEYPAIR_FILE or SOLANA_PRIVATE_KEY, not both');
    return undefined;
  }
  if (file !== undefined) return readSolanaKeypairFile(file, problem);
  if (b58 === undefined) return undefined;
  const bytes = decodeBase58(b58);
  if (bytes?.length !== 64) problem('SOLANA_PRIVATE_KEY', 'must be a base58 secret key of 64 bytes');
  else if (!isConsistentSolanaKeypair(bytes))
    problem('SOLANA_PRIVATE_KEY', 'is 64 bytes whose public half does not match the secret half');
  else return hiddenBytes(bytes);
  return undefined;
}

function readSolanaKeypairFile(file: string, problem: Problem): Uint8Array | undefined {
  const read = readKeyFile(file);
  if (!read.ok) {
    problem('SOLANA_KEYPAIR_FILE', `${file} ${read.reason}`);
    return undefined;
  }
  warnIfKeyFileExposed('SOLANA_KEYPAIR_FILE', file, { mode: read.mode });
  try {
    const parsed: unknown = JSON.parse(read.text);
    if (
      Array.isArray(parsed) &&
      parsed.length === 64 &&
      parsed.every((b) => Number.isInteger(b) && b >= 0 && b <= 255)
    ) {
      const bytes = Uint8Array.from(parsed as number[]);
      if (isConsistentSolanaKeypair(bytes)) return hiddenBytes(bytes);
      problem('SOLANA_KEYPAIR_FILE', 'holds 64 bytes whose public half does not match the secret half');
    } else problem('SOLANA_KEYPAIR_FILE', 'must hold a solana-keygen JSON array of 64 bytes');
  } catch {
    problem('SOLANA_KEYPAIR_FILE', 'must hold a solana-keygen JSON array of 64 bytes');
  }
  return undefined;
}
