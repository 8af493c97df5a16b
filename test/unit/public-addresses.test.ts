import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, describe, expect, it } from 'vitest';
import type { ConfigNeeds } from '../../src/config/config.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { encodeBase58 } from '../../src/domain/base58.ts';
import { ConfigError } from '../../src/domain/errors.ts';
import { signingKeys } from '../../src/signing/evm/keystore.ts';
import { v3Keystore } from '../helpers/v3-keystore.ts';

/*
 * The treasury's public addresses in the configuration (docs/keys.md, issue 33):
 * EVM_OWNER_ADDRESSES and SOLANA_ADDRESS, else the keystores' `address` fields (read without the
 * password) in a process that does not sign; in the worker, its keys' addresses, which
 * EVM_OWNER_ADDRESSES and SOLANA_ADDRESS must agree with.
 */

// anvil's well-known development keys (throwaway, public).
const K1 = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80' as const;
const K2 = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d' as const;
const [A1, A2] = [K1, K2].map((k) => privateKeyToAccount(k).address) as [string, string];
const WORKER: ConfigNeeds = { keys: signingKeys };

const dir = mkdtempSync(join(tmpdir(), 'usdc-public-addresses-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const file = (content: string) => {
  const path = join(dir, `f${n++}`);
  writeFileSync(path, content, { mode: 0o600 });
  return path;
};

function solanaKeypair(): { secret: Uint8Array; address: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const seed = privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(-32);
  const pub = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  return { secret: Uint8Array.from([...seed, ...pub]), address: encodeBase58(Uint8Array.from(pub)) };
}

function problemsOf(env: Record<string, string>, needs: ConfigNeeds = {}) {
  try {
    loadConfig(env, needs);
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
  return [];
}

describe('EVM_OWNER_ADDRESSES and SOLANA_ADDRESS', () => {
  it('are read in order, checksummed', () => {
    const solana = solanaKeypair().address;
    const config = loadConfig({
      EVM_OWNER_ADDRESSES: ` ${A2.toLowerCase()}, ${A1} `,
      SOLANA_ADDRESS: solana,
    });
    expect(config.evmOwnerAddresses).toEqual([A2, A1]);
    expect(config.solanaAddress).toBe(solana);
  });

  it('name a bad entry by its position, never echoing it (it may be a key pasted by mistake)', () => {
    // A1 is 0xf39F…: its first letter upper-cased breaks the EIP-55 checksum.
    const badChecksum = `0xF${A1.slice(3)}`;
    const problems = problemsOf({
      EVM_OWNER_ADDRESSES: `${A1},${K2},${badChecksum},${A1}`,
      SOLANA_ADDRESS: encodeBase58(solanaKeypair().secret),
    });
    expect(problems).toEqual([
      {
        variable: 'EVM_OWNER_ADDRESSES',
        message: 'entry 2 of 4 is not an EVM address (0x followed by 40 hex digits)',
      },
      { variable: 'EVM_OWNER_ADDRESSES', message: 'entry 3 of 4 has an invalid EIP-55 checksum' },
      { variable: 'EVM_OWNER_ADDRESSES', message: `lists ${A1} twice (each owner once)` },
      { variable: 'SOLANA_ADDRESS', message: 'is not a Solana address (base58, 32 bytes)' },
    ]);
    expect(JSON.stringify(problems)).not.toContain(K2.slice(2));
  });
});

describe('a process that does not sign', () => {
  it('takes the keystores’ address fields, without their password file', () => {
    const config = loadConfig({
      EVM_KEYSTORE_FILE: `${file(JSON.stringify(v3Keystore(K2, 'pw')))},${file(JSON.stringify(v3Keystore(K1, 'pw')))}`,
      EVM_KEYSTORE_PASSWORD_FILE: '/secrets/missing',
    });
    expect(config.evmOwnerAddresses).toEqual([A2, A1]);
    expect(config.evmPrivateKeys).toEqual([]);
  });

  it('takes EVM_OWNER_ADDRESSES before the keystores', () => {
    const config = loadConfig({
      EVM_OWNER_ADDRESSES: A1,
      EVM_KEYSTORE_FILE: file(JSON.stringify(v3Keystore(K2, 'pw'))),
    });
    expect(config.evmOwnerAddresses).toEqual([A1]);
  });

  it('takes none when a keystore cannot be read or has no address field (a partial list would be wrong)', () => {
    const good = file(JSON.stringify(v3Keystore(K1, 'pw')));
    const { address: _, ...bare } = v3Keystore(K2, 'pw');
    for (const other of [
      '/secrets/owner-2.json',
      file(JSON.stringify(bare)),
      file('not json'),
      '/dev/zero',
      dir,
    ]) {
      expect(loadConfig({ EVM_KEYSTORE_FILE: `${good},${other}` }).evmOwnerAddresses, other).toEqual([]);
    }
  });
});

describe('the worker', () => {
  it('knows its keys’ addresses, in order', () => {
    const solana = solanaKeypair();
    const config = loadConfig(
      { EVM_PRIVATE_KEY: `${K2},${K1}`, SOLANA_PRIVATE_KEY: encodeBase58(solana.secret) },
      WORKER,
    );
    expect(config.evmOwnerAddresses).toEqual([A2, A1]);
    expect(config.solanaAddress).toBe(solana.address);
  });

  it('accepts EVM_OWNER_ADDRESSES listing its keys (and owners other workers hold), in that order', () => {
    const other = privateKeyToAccount(`0x${'11'.repeat(32)}`).address;
    const config = loadConfig({ EVM_PRIVATE_KEY: K1, EVM_OWNER_ADDRESSES: `${other},${A1}` }, WORKER);
    expect(config.evmOwnerAddresses).toEqual([other, A1]);
    expect(config.evmPrivateKeys.map((k) => k.reveal())).toEqual([K1]);
  });

  it('refuses EVM_OWNER_ADDRESSES or SOLANA_ADDRESS that do not name its keys, naming the variable', () => {
    const solana = solanaKeypair();
    const problems = problemsOf(
      {
        EVM_PRIVATE_KEY: `${K1},${K2}`,
        EVM_OWNER_ADDRESSES: A1,
        SOLANA_PRIVATE_KEY: encodeBase58(solana.secret),
        SOLANA_ADDRESS: solanaKeypair().address,
      },
      WORKER,
    );
    expect(problems).toEqual([
      {
        variable: 'EVM_OWNER_ADDRESSES',
        message: `does not list ${A2}, the address of key 2 of 2: list every treasury owner, or leave it unset`,
      },
      { variable: 'SOLANA_ADDRESS', message: `is not the Solana key's address (${solana.address})` },
    ]);
  });
});
