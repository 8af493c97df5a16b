import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeBase58 } from '../domain/base58.ts';
import { evmAddressOfKey } from '../signing/evm/owner-address.ts';

/** Throwaway signing keys for the sandbox and the demo, in files a worker reads. */
export type ThrowawayKeys = {
  /** A 32-byte hex EVM key (`EVM_PRIVATE_KEY_FILE`). */
  readonly evmKeyFile: string;
  /** The same key, for the demo, which funds its address. */
  readonly evmPrivateKey: `0x${string}`;
  /** Its public address (`EVM_OWNER_ADDRESSES`, for the commands that hold no key). */
  readonly evmAddress: string;
  /** A solana-keygen JSON keypair (`SOLANA_KEYPAIR_FILE`). */
  readonly solanaKeyFile: string;
  readonly solanaAddress: string;
};

/**
 * Makes a fresh random EVM key and Solana keypair in `dir` (files readable by their owner only).
 * They are for one run against the sandbox, whose chains use testnet ids: never fund them on a
 * real chain, never reuse them. The caller removes `dir` when the run ends.
 */
export function makeThrowawayKeys(dir: string): ThrowawayKeys {
  const evmPrivateKey = `0x${randomBytes(32).toString('hex')}` as const;
  const evmKeyFile = join(dir, 'throwaway-evm.key');
  writeFileSync(evmKeyFile, `${evmPrivateKey}\n`, { mode: 0o600 });
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const seed = privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(-32);
  const pub = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  const solanaKeyFile = join(dir, 'throwaway-solana-keypair.json');
  writeFileSync(solanaKeyFile, JSON.stringify([...seed, ...pub]), { mode: 0o600 });
  return {
    evmKeyFile,
    evmPrivateKey,
    evmAddress: evmAddressOfKey(evmPrivateKey),
    solanaKeyFile,
    solanaAddress: encodeBase58(Uint8Array.from(pub)),
  };
}
