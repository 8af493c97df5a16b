import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, describe, expect, it } from 'vitest';
import { warnIfKeyFileExposed } from '../../src/config/key-file-mode.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { ConfigError } from '../../src/domain/errors.ts';
import {
  MAX_PBKDF2_ROUNDS,
  MAX_SCRYPT_COST,
  openKeystore,
  parseKeystore,
  signingKeys,
} from '../../src/signing/evm/keystore.ts';
import { v3Keystore } from '../helpers/v3-keystore.ts';

/** The worker's view: key settings are read (docs/keys.md). */
const KEYS = { keys: signingKeys } as const;

/*
 * EVM_KEYSTORE_FILE: V3 keystores opened with viem's ox. The first two files are the Web3 Secret
 * Storage definition's published test vectors (password "testpassword"; the scrypt one as the wiki
 * and web3j give it: n = 2^18, r = 1, p = 8); the others are written
 * here by another implementation (node:crypto's OpenSSL scrypt/PBKDF2/AES, test/helpers/v3-keystore.ts).
 */

const VECTOR_SECRET = '0x7a28b5ba57c53603b0b07b56bba752f7784bf506fa95edc395f5cf6c7514fe9d';
const VECTOR_ADDRESS = '0x008AeEda4D805471dF9b2A5B0f38A0C3bCBA786b';
const VECTORS = {
  // PBKDF2-SHA-256 (the definition's test vector).
  pbkdf2: {
    crypto: {
      cipher: 'aes-128-ctr',
      cipherparams: { iv: '6087dab2f9fdbbfaddc31a909735c1e6' },
      ciphertext: '5318b4d5bcd28de64ee5559e671353e16f075ecae9f99c7a79a38af5f869aa46',
      kdf: 'pbkdf2',
      kdfparams: {
        c: 262144,
        dklen: 32,
        prf: 'hmac-sha256',
        salt: 'ae3cd4e7013836a3df6bd7241b12db061dbe2c6785853cce422d148a624ce0bd',
      },
      mac: '517ead924a9d0dc3124507e3393d175ce3ff7c1e96529c6c555ce9e51205e9b2',
    },
    id: '3198bc9c-6672-5ab3-d995-4942343ae5b6',
    version: 3,
  },
  // Scrypt, n = 2^18, r = 1, p = 8 (the wiki's original vector).
  scryptR1P8: {
    crypto: {
      cipher: 'aes-128-ctr',
      cipherparams: { iv: '83dbcc02d8ccb40e466191a123791e0e' },
      ciphertext: 'd172bf743a674da9cdad04534d56926ef8358534d458fffccd4e6ad2fbde479c',
      kdf: 'scrypt',
      kdfparams: {
        dklen: 32,
        n: 262144,
        r: 1,
        p: 8,
        salt: 'ab0c7876052600dd703518d6fc3fe8984592145b591fc8fb5c6d43190334ba19',
      },
      mac: '2103ac29920d71da29f15d75b4a16dbe95cfd7ff8faea1056c33131d846e3097',
    },
    id: '3198bc9c-6672-5ab3-d995-4942343ae5b6',
    version: 3,
  },
} as const;

// anvil's well-known development keys (throwaway, public).
const K1 = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
const K2 = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d';
const PASSWORD = 'correct horse battery staple 7f3a';

const dir = mkdtempSync(join(tmpdir(), 'usdc-keystore-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const file = (content: unknown, mode = 0o600): string => {
  const path = join(dir, `file-${n++}.json`);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content), { mode });
  return path;
};
const passwordFile = (password: string, trailer = '\n') => file(`${password}${trailer}`);

function problemsOf(env: Record<string, string>): { variable: string; message: string }[] {
  try {
    loadConfig(env, KEYS);
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
  return [];
}

describe('EVM_KEYSTORE_FILE: the Web3 Secret Storage test vectors', () => {
  it.each(Object.keys(VECTORS) as (keyof typeof VECTORS)[])('opens the %s vector to its secret', (name) => {
    const config = loadConfig(
      {
        EVM_KEYSTORE_FILE: file(VECTORS[name]),
        EVM_KEYSTORE_PASSWORD_FILE: passwordFile('testpassword'),
      },
      KEYS,
    );
    expect(config.evmPrivateKeys.map((k) => k.reveal())).toEqual([VECTOR_SECRET]);
    expect(privateKeyToAccount(VECTOR_SECRET).address).toBe(VECTOR_ADDRESS);
  });

  it('a wrong password is a problem naming the file, never the password', () => {
    const path = file(VECTORS.pbkdf2);
    const problems = problemsOf({
      EVM_KEYSTORE_FILE: path,
      EVM_KEYSTORE_PASSWORD_FILE: passwordFile('testpassworD'),
    });
    expect(problems).toEqual([
      {
        variable: 'EVM_KEYSTORE_FILE',
        message: `${path} does not open with the password (a wrong password, or a damaged file)`,
      },
    ]);
    expect(JSON.stringify(problems)).not.toContain('testpassworD');
  });
});

describe('EVM_KEYSTORE_FILE: keystores written by another implementation', () => {
  it('opens scrypt and pbkdf2 keystores written with node:crypto, each an owner in the listed order', () => {
    const a = file(v3Keystore(K1, PASSWORD, { kdf: 'scrypt', n: 8192, r: 8, p: 1 }));
    const b = file(v3Keystore(K2, PASSWORD, { kdf: 'pbkdf2', c: 10_000 }));
    const config = loadConfig(
      {
        EVM_KEYSTORE_FILE: `${a}, ${b}`,
        EVM_KEYSTORE_PASSWORD_FILE: passwordFile(PASSWORD, '\r\nsecond line is not the password\n'),
      },
      KEYS,
    );
    expect(config.evmPrivateKeys.map((k) => k.reveal())).toEqual([K1, K2]);
  });

  it('reads the old geth "Crypto" spelling and upper-case hex', () => {
    const ks = v3Keystore(K1, PASSWORD);
    const { crypto, ...rest } = ks;
    const upper = {
      ...rest,
      Crypto: { ...crypto, ciphertext: crypto.ciphertext.toUpperCase(), mac: `0x${crypto.mac}` },
    };
    expect(openKeystore(JSON.stringify(upper), PASSWORD)).toMatchObject({ ok: true, privateKey: K1 });
  });

  it('names every damaged file, and loads no key when one is', () => {
    const good = v3Keystore(K1, PASSWORD);
    const flipped = {
      ...good,
      crypto: {
        ...good.crypto,
        ciphertext: `${good.crypto.ciphertext.slice(0, -2)}${good.crypto.ciphertext.endsWith('00') ? '01' : '00'}`,
      },
    };
    const cases: [string, string][] = [
      [file(JSON.stringify(good).slice(0, 80)), 'is not JSON'],
      [file(flipped), 'does not open with the password (a wrong password, or a damaged file)'],
      [file({ ...good, version: 1 }), 'is not a version 3 keystore'],
      [
        file({ ...good, crypto: { ...good.crypto, cipher: 'aes-128-cbc' } }),
        'uses a cipher other than aes-128-ctr',
      ],
      [
        file({ ...good, crypto: { ...good.crypto, kdf: 'argon2' } }),
        'uses a key derivation other than scrypt or pbkdf2',
      ],
      [file({ ...good, crypto: { ...good.crypto, mac: 'abcd' } }), 'has no 32-byte mac'],
      [
        file({ ...good, address: privateKeyToAccount(K2).address.slice(2) }),
        'holds a key whose address is not the one its address field names',
      ],
    ];
    for (const [path, reason] of cases) {
      const problems = problemsOf({
        EVM_KEYSTORE_FILE: `${file(good)},${path}`,
        EVM_KEYSTORE_PASSWORD_FILE: passwordFile(PASSWORD),
      });
      expect(problems, reason).toEqual([{ variable: 'EVM_KEYSTORE_FILE', message: `${path} ${reason}` }]);
    }
    const missing = join(dir, 'nowhere.json');
    expect(
      problemsOf({ EVM_KEYSTORE_FILE: missing, EVM_KEYSTORE_PASSWORD_FILE: passwordFile(PASSWORD) }),
    ).toEqual([{ variable: 'EVM_KEYSTORE_FILE', message: `${missing} cannot be read (ENOENT)` }]);
  });

  it('refuses the same owner twice', () => {
    const a = file(v3Keystore(K1, PASSWORD));
    const b = file(v3Keystore(K1, PASSWORD));
    expect(
      problemsOf({ EVM_KEYSTORE_FILE: `${a},${b}`, EVM_KEYSTORE_PASSWORD_FILE: passwordFile(PASSWORD) }),
    ).toEqual([
      { variable: 'EVM_KEYSTORE_FILE', message: `${b} holds the same owner as ${a} (each owner once)` },
    ]);
  });
});

describe('EVM_KEYSTORE_FILE: with the other key settings', () => {
  const ks = () => file(v3Keystore(K1, PASSWORD));

  it('is exactly one of EVM_PRIVATE_KEY, EVM_PRIVATE_KEY_FILE, EVM_KEYSTORE_FILE', () => {
    const keyFile = file(`${K2}\n`);
    for (const other of [{ EVM_PRIVATE_KEY: K2 }, { EVM_PRIVATE_KEY_FILE: keyFile }]) {
      expect(
        problemsOf({ EVM_KEYSTORE_FILE: ks(), EVM_KEYSTORE_PASSWORD_FILE: passwordFile(PASSWORD), ...other }),
      ).toEqual([
        {
          variable: 'EVM_KEYSTORE_FILE',
          message: 'set exactly one of EVM_PRIVATE_KEY, EVM_PRIVATE_KEY_FILE, EVM_KEYSTORE_FILE',
        },
      ]);
    }
  });

  it('needs its password file, and the password file needs a keystore', () => {
    expect(problemsOf({ EVM_KEYSTORE_FILE: ks() })).toEqual([
      {
        variable: 'EVM_KEYSTORE_PASSWORD_FILE',
        message: "is required with EVM_KEYSTORE_FILE: a file whose first line is the keystores' password",
      },
    ]);
    const missing = join(dir, 'no-password');
    expect(problemsOf({ EVM_KEYSTORE_FILE: ks(), EVM_KEYSTORE_PASSWORD_FILE: missing })).toEqual([
      { variable: 'EVM_KEYSTORE_PASSWORD_FILE', message: `${missing} cannot be read (ENOENT)` },
    ]);
    expect(problemsOf({ EVM_KEYSTORE_PASSWORD_FILE: passwordFile(PASSWORD) })).toEqual([
      {
        variable: 'EVM_KEYSTORE_PASSWORD_FILE',
        message: 'is set without EVM_KEYSTORE_FILE (the keystores it opens)',
      },
    ]);
  });

  it('counts as the worker’s EVM key', () => {
    const config = loadConfig(
      {
        EVM_KEYSTORE_FILE: ks(),
        EVM_KEYSTORE_PASSWORD_FILE: passwordFile(PASSWORD),
        PERMIT_SPENDER: privateKeyToAccount(K2).address,
      },
      { signingKey: true, ...KEYS },
    );
    expect(config.evmPrivateKeys).toHaveLength(1);
  });

  // Issue 33: this ran `wallets`, which no longer opens keystores (keys stay in the worker).
  it('the worker exits 2 on a wrong password, naming the file and never printing the password', () => {
    const path = ks();
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const r = spawnSync(process.execPath, [join(root, 'bin/usdc-batch.js'), 'worker'], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 30_000,
      env: {
        PATH: process.env['PATH'] ?? '',
        HOME: dir,
        TRANSFER_API_URL: 'http://127.0.0.1:9',
        TRANSFER_API_KEY: 'sk_test_0123456789abcdef',
        PERMIT_SPENDER: privateKeyToAccount(K2).address,
        EVM_KEYSTORE_FILE: path,
        EVM_KEYSTORE_PASSWORD_FILE: passwordFile('not the password'),
      },
    });
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toContain(`EVM_KEYSTORE_FILE: ${path} does not open with the password`);
    expect(r.stderr + r.stdout).not.toContain('not the password');
    expect(r.stderr + r.stdout).not.toContain(PASSWORD);
    expect(readFileSync(path, 'utf8')).toContain('"version":3');
  });
});

describe('key files readable by group or others', () => {
  const keypair = (mode: number) => {
    const path = file('[]', mode);
    chmodSync(path, mode); // the umask may have narrowed the mode asked at creation
    return path;
  };

  it('draws a warning naming the variable and the file, as ssh does', () => {
    for (const [mode, who] of [
      [0o644, 'its group and others'],
      [0o640, 'its group'],
      [0o604, 'others'],
    ] as const) {
      const path = keypair(mode);
      expect(warnIfKeyFileExposed('SOLANA_KEYPAIR_FILE', path)).toBe(
        `SOLANA_KEYPAIR_FILE: ${path} is readable by ${who} (mode ${mode.toString(8)}): a private key file should be readable by its owner only (chmod 600 ${path})`,
      );
    }
    expect(warnIfKeyFileExposed('SOLANA_KEYPAIR_FILE', keypair(0o600))).toBeUndefined();
    expect(warnIfKeyFileExposed('SOLANA_KEYPAIR_FILE', keypair(0o400))).toBeUndefined();
  });

  it('is emitted when the configuration reads a Solana keypair file', async () => {
    const path = keypair(0o644);
    let listener: ((w: Error) => void) | undefined;
    const warned = new Promise<Error>((resolve) => {
      listener = (w) => {
        if (w.message.includes(path)) resolve(w);
      };
      process.on('warning', listener);
    });
    expect(() => loadConfig({ SOLANA_KEYPAIR_FILE: path }, KEYS)).toThrow(ConfigError); // '[]' is no keypair
    const warning = await warned;
    process.off('warning', listener as (w: Error) => void);
    expect(warning.message).toContain(`SOLANA_KEYPAIR_FILE: ${path} is readable by its group and others`);
  });
});

/** Runs `fn`, and the process warnings emitted meanwhile (they are emitted on the next tick). */
async function warningsOf(fn: () => void): Promise<string[]> {
  const seen: string[] = [];
  const listener = (w: Error) => seen.push(w.message);
  process.on('warning', listener);
  try {
    fn();
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('warning', listener);
  }
  return seen;
}

describe('issue 33: the password file as editors leave it, and exposed keystores', () => {
  it('ignores a UTF-8 BOM and the line break (CRLF, LF or CR) after the password', () => {
    // A BOM read as part of the password made a right password a wrong one.
    for (const text of [
      `\uFEFF${PASSWORD}\r\n`,
      `\uFEFF${PASSWORD}`,
      `${PASSWORD}\r`,
      `\uFEFF${PASSWORD}\nmore\n`,
    ]) {
      const config = loadConfig(
        { EVM_KEYSTORE_FILE: file(v3Keystore(K1, PASSWORD)), EVM_KEYSTORE_PASSWORD_FILE: file(text) },
        KEYS,
      );
      expect(
        config.evmPrivateKeys.map((k) => k.reveal()),
        JSON.stringify(text),
      ).toEqual([K1]);
    }
  });

  it('warns of a keystore or password file its group or others may read, naming the variable and the file', async () => {
    const keystore = file(v3Keystore(K1, PASSWORD), 0o640);
    const password = passwordFile(PASSWORD);
    chmodSync(keystore, 0o640);
    chmodSync(password, 0o604);
    const warnings = await warningsOf(() =>
      loadConfig({ EVM_KEYSTORE_FILE: keystore, EVM_KEYSTORE_PASSWORD_FILE: password }, KEYS),
    );
    expect(warnings).toEqual([
      `EVM_KEYSTORE_PASSWORD_FILE: ${password} is readable by others (mode 604): a password file should be readable by its owner only (chmod 600 ${password})`,
      `EVM_KEYSTORE_FILE: ${keystore} is readable by its group (mode 640): a keystore file should be readable by its owner only (chmod 600 ${keystore})`,
    ]);
    chmodSync(keystore, 0o600);
    chmodSync(password, 0o400);
    expect(
      await warningsOf(() =>
        loadConfig({ EVM_KEYSTORE_FILE: keystore, EVM_KEYSTORE_PASSWORD_FILE: password }, KEYS),
      ),
    ).toEqual([]);
  });
});

describe('issue 33: the key derivation a keystore may ask for', () => {
  const withKdf = (kdf: 'scrypt' | 'pbkdf2', params: Record<string, unknown>) => {
    const real = v3Keystore(K1, PASSWORD);
    return JSON.stringify({
      ...real,
      crypto: { ...real.crypto, kdf, kdfparams: { dklen: 32, salt: real.crypto.kdfparams.salt, ...params } },
    });
  };

  it('is at most four times geth’s standard: scrypt n·r·p ≤ 4·2^18·8, pbkdf2 ≤ 4·262,144 rounds', () => {
    expect(MAX_SCRYPT_COST).toBe(4 * 2 ** 18 * 8);
    expect(MAX_PBKDF2_ROUNDS).toBe(1_048_576);
    // Parsed only (nothing derived): the bound itself is accepted, one step above it is not.
    expect(parseKeystore(withKdf('scrypt', { n: 2 ** 18, r: 8, p: 1 })).ok).toBe(true);
    expect(parseKeystore(withKdf('scrypt', { n: 2 ** 18, r: 8, p: 4 })).ok).toBe(true);
    expect(parseKeystore(withKdf('scrypt', { n: 2 ** 18, r: 8, p: 5 })).ok).toBe(false);
    expect(parseKeystore(withKdf('pbkdf2', { c: 1_048_576, prf: 'hmac-sha256' })).ok).toBe(true);
    expect(parseKeystore(withKdf('pbkdf2', { c: 1_048_577, prf: 'hmac-sha256' })).ok).toBe(false);
  });

  it('refuses a costlier one before deriving anything, saying so (not "wrong password")', () => {
    // n = 2^20, r = 64 said "wrong password"; n = 2^17, r = 63, p = 64 ran for minutes.
    for (const params of [
      { n: 2 ** 20, r: 64, p: 1 },
      { n: 2 ** 17, r: 63, p: 64 },
    ]) {
      const opened = openKeystore(withKdf('scrypt', params), PASSWORD);
      expect(opened).toEqual({
        ok: false,
        reason: expect.stringMatching(
          /^asks for a key derivation above four times geth’s standard \(scrypt n·r·p = /,
        ),
      });
    }
    const path = file(withKdf('pbkdf2', { c: 5_000_000, prf: 'hmac-sha256' }));
    expect(
      problemsOf({ EVM_KEYSTORE_FILE: path, EVM_KEYSTORE_PASSWORD_FILE: passwordFile(PASSWORD) }),
    ).toEqual([
      {
        variable: 'EVM_KEYSTORE_FILE',
        message: `${path} asks for a key derivation above four times geth’s standard (pbkdf2 5000000 rounds is over 1048576 = 4·262,144): re-encrypt it with geth’s standard parameters`,
      },
    ]);
  });

  it('refuses scrypt parameters that are not whole numbers or an n that is not a power of 2', () => {
    for (const params of [
      { n: 3000, r: 8, p: 1 },
      { n: 4096, r: 0, p: 1 },
      { n: 4096, r: 8, p: 1.5 },
    ]) {
      expect(parseKeystore(withKdf('scrypt', params)), JSON.stringify(params)).toEqual({
        ok: false,
        reason: 'has scrypt parameters out of range (n a power of 2, r and p whole numbers)',
      });
    }
  });
});
