import { checkEvmAddress, checkSolanaAddress } from '../domain/addresses.ts';
import { encodeBase58 } from '../domain/base58.ts';
import type { Config, ConfigNeeds } from './config.ts';
import type { EnvReader, Problem } from './env-reader.ts';
import { readKeyFile } from './key-file.ts';
import { readEvmKeys, readSolanaKey } from './signing-keys.ts';

/*
 * Keys stay in the worker (docs/keys.md): only a process that signs (`worker`,
 * `demo`: `needs.keys`) reads a private key or opens a keystore. Every other command ignores the key
 * settings altogether — one it cannot read does not stop it — and knows the treasury by its public
 * addresses: EVM_OWNER_ADDRESSES and SOLANA_ADDRESS, else the keystores' public `address` field
 * (read without the password); the addresses the running workers published to Redis come after
 * these (src/ops/public-addresses.ts).
 */

export type TreasuryKeys = Pick<
  Config,
  'evmPrivateKeys' | 'solanaSecretKey' | 'evmOwnerAddresses' | 'solanaAddress'
>;

/**
 * EVM_OWNER_ADDRESSES: comma-separated, EIP-55 checked, each once. An entry is named by its
 * position, never echoed (a private key pasted there by mistake is not printed).
 */
function readOwnerAddresses(r: EnvReader, problem: Problem): string[] | undefined {
  const list = r.list('EVM_OWNER_ADDRESSES');
  if (list === undefined) return undefined;
  const owners: string[] = [];
  list.forEach((text, i) => {
    const which = list.length > 1 ? `entry ${i + 1} of ${list.length}` : 'the entry';
    const checked = checkEvmAddress(text);
    if (!checked.ok) problem('EVM_OWNER_ADDRESSES', `${which} ${checked.reason}`);
    else if (owners.includes(checked.value))
      problem('EVM_OWNER_ADDRESSES', `lists ${checked.value} twice (each owner once)`);
    else owners.push(checked.value);
  });
  return owners.length === list.length ? owners : [];
}

/** SOLANA_ADDRESS: a base58 public key (not echoed when it is not one: it may be a pasted secret). */
function readSolanaAddress(r: EnvReader, problem: Problem): string | undefined {
  const text = r.str('SOLANA_ADDRESS');
  if (text === undefined) return undefined;
  const checked = checkSolanaAddress(text);
  if (checked.ok) return checked.value;
  problem('SOLANA_ADDRESS', checked.reason);
  return undefined;
}

/**
 * The public `address` field of every keystore in `files` (geth, Foundry and ethers write it),
 * read without the password and bounded like every key file; undefined when any file cannot be
 * read or has none (a partial list of owners would be a wrong one).
 */
export function keystoreAddresses(files: readonly string[]): string[] | undefined {
  if (files.length === 0) return undefined;
  const owners: string[] = [];
  for (const file of files) {
    const read = readKeyFile(file);
    if (!read.ok) return undefined;
    let field: unknown;
    try {
      field = (JSON.parse(read.text) as Record<string, unknown> | null)?.['address'];
    } catch {
      return undefined;
    }
    if (typeof field !== 'string' || !/^(0x)?[0-9a-fA-F]{40}$/.test(field)) return undefined;
    const checked = checkEvmAddress(`0x${field.replace(/^0x/, '').toLowerCase()}`);
    if (!checked.ok || owners.includes(checked.value)) return undefined;
    owners.push(checked.value);
  }
  return owners;
}

/**
 * The worker's own keys, cross-checked with the public addresses given: each key's address must be
 * in EVM_OWNER_ADDRESSES (other workers may hold the rest), the Solana key's must be SOLANA_ADDRESS.
 */
function readSigningKeys(
  r: EnvReader,
  problem: Problem,
  keys: NonNullable<ConfigNeeds['keys']>,
  owners: readonly string[] | undefined,
  solanaAddress: string | undefined,
): TreasuryKeys {
  const evmPrivateKeys = readEvmKeys(r, problem, keys);
  const solanaSecretKey = readSolanaKey(r, problem);
  const keyOwners = evmPrivateKeys.map((k) => keys.evmAddressOf(k.reveal()));
  keyOwners.forEach((owner, i) => {
    if (owners !== undefined && owners.length > 0 && !owners.includes(owner)) {
      const which = keyOwners.length > 1 ? `key ${i + 1} of ${keyOwners.length}` : 'the EVM key';
      problem(
        'EVM_OWNER_ADDRESSES',
        `does not list ${owner}, the address of ${which}: list every treasury owner, or leave it unset`,
      );
    }
  });
  const keySolana = solanaSecretKey ? encodeBase58(solanaSecretKey.subarray(32)) : undefined;
  if (solanaAddress !== undefined && keySolana !== undefined && solanaAddress !== keySolana)
    problem('SOLANA_ADDRESS', `is not the Solana key's address (${keySolana})`);
  return {
    evmPrivateKeys,
    solanaSecretKey,
    evmOwnerAddresses: Object.freeze(owners ?? keyOwners),
    solanaAddress: solanaAddress ?? keySolana,
  };
}

/**
 * The treasury's keys (a signing process only) and public addresses. Without `needs.keys` no key
 * setting is read: EVM_PRIVATE_KEY(_FILE), SOLANA_KEYPAIR_FILE/SOLANA_PRIVATE_KEY and
 * EVM_KEYSTORE_PASSWORD_FILE are ignored, and EVM_KEYSTORE_FILE only lends its public `address` fields.
 */
export function readTreasuryKeys(r: EnvReader, problem: Problem, needs: ConfigNeeds): TreasuryKeys {
  if ((needs.signingKey || needs.evmKey || needs.solanaKey) && needs.keys === undefined)
    throw new Error(
      'loadConfig: a command that needs a signing key must give `keys` (src/signing/evm/keystore.ts)',
    );
  const owners = readOwnerAddresses(r, problem);
  const solanaAddress = readSolanaAddress(r, problem);
  if (needs.keys !== undefined) return readSigningKeys(r, problem, needs.keys, owners, solanaAddress);
  return {
    evmPrivateKeys: Object.freeze([]),
    solanaSecretKey: undefined,
    evmOwnerAddresses: Object.freeze(owners ?? keystoreAddresses(r.list('EVM_KEYSTORE_FILE') ?? []) ?? []),
    solanaAddress,
  };
}
