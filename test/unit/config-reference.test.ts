import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { renderConfigReference, REFERENCE_FILE } from '../../scripts/config-reference.ts';
import type { ConfigNeeds } from '../../src/config/config.ts';
import { DEFAULTS } from '../../src/config/defaults.ts';
import type { Env } from '../../src/config/env-reader.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import {
  COMPOSE_VARIABLES,
  CONFIG_VARIABLES,
  expandedNames,
  shown,
  type ConfigVariable,
} from '../../src/config/variables.ts';
import { signingKeys } from '../../src/signing/evm/keystore.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'usdc-batch-config-reference-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * The variables loadConfig reads from `env`, seen through a proxy: every read of the environment
 * goes through the env reader (`env[name]`), whatever the value, so this is what the product reads.
 */
function variablesRead(env: Record<string, string>, needs: ConfigNeeds): Set<string> {
  const read = new Set<string>();
  const watched = new Proxy(env, {
    get(target, name) {
      if (typeof name === 'string') read.add(name);
      return target[name as string];
    },
  }) as Env;
  try {
    loadConfig(watched, needs);
  } catch {
    // A configuration with problems still read every variable it names.
  }
  return read;
}

/** Every variable any command's configuration reads: no needs, every need, and the branches settings open. */
function everyVariableRead(): Set<string> {
  const accessFile = join(dir, 'access.yaml');
  writeFileSync(accessFile, 'credentials: []\n');
  const all: ConfigNeeds = {
    service: true,
    evmKey: true,
    solanaKey: true,
    signingKey: true,
    access: true,
    keys: signingKeys,
  };
  const runs: [Record<string, string>, ConfigNeeds][] = [
    [{}, {}],
    [{}, all],
    [{ ACCESS_FILE: accessFile, REDIS_SENTINELS: 'a:26379', REDIS_SENTINEL_NAME: 'm' }, all],
    [{ EVM_KEYSTORE_FILE: join(dir, 'none.json') }, all],
    [{ EVM_PRIVATE_KEY_FILE: join(dir, 'none.key'), SOLANA_KEYPAIR_FILE: join(dir, 'none.json') }, all],
  ];
  const read = new Set<string>();
  for (const [env, needs] of runs) for (const name of variablesRead(env, needs)) read.add(name);
  return read;
}

const rowOf = (name: string): ConfigVariable | undefined =>
  CONFIG_VARIABLES.find((r) => expandedNames(r).includes(name));

describe('the configuration reference (src/config/variables.ts → docs/configuration.md)', () => {
  it('has a row for every variable loadConfig reads, and reads every variable it has a row for', () => {
    const read = [...everyVariableRead()].filter((n) => /^[A-Z][A-Z0-9_]+$/.test(n)).sort();
    const all = CONFIG_VARIABLES.flatMap(expandedNames);
    // A row read elsewhere (a library's own standard variables) is not looked for among loadConfig's reads.
    const byLoadConfig = CONFIG_VARIABLES.filter((r) => r.readElsewhere === undefined).flatMap(expandedNames);
    expect(
      read.filter((n) => !all.includes(n)),
      'read but without a row',
    ).toEqual([]);
    expect(byLoadConfig.filter((n) => !read.includes(n)).sort(), 'a row that nothing reads').toEqual([]);
    expect(new Set(all).size, 'each variable in one row').toBe(all.length);
  });

  it('shows every default the code has, as DEFAULTS holds it', () => {
    for (const key of Object.keys(DEFAULTS) as (keyof typeof DEFAULTS)[]) {
      expect(rowOf(key)?.default, key).toContain(shown(key));
    }
    expect(shown('REDIS_REPLICA_ACKS', 'REDIS_REPLICA_ACK_TIMEOUT_MS')).toBe('`auto`, `5000`');
  });

  it("shows docker-compose.yml's own variables with the file's defaults", () => {
    const compose = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');
    const referenced = new Map(
      [...compose.matchAll(/\$\{([A-Z_][A-Z0-9_]*)(?::-([^}]*))?\}/g)].map((m) => [m[1] as string, m[2]]),
    );
    const composeRows = COMPOSE_VARIABLES.flatMap(expandedNames);
    expect(composeRows.sort()).toEqual([...referenced.keys()].sort());
    for (const row of COMPOSE_VARIABLES) {
      const [name] = row.names;
      const fallback = referenced.get(name as string);
      // An empty default (`${NAME:-}`) is shown as "none …" (nothing is set).
      if (fallback === '') expect(row.default, name).toMatch(/^none\b/);
      else expect(row.default, name).toBe(`\`${fallback}\``);
    }
  });

  it('is committed as npm run docs:config writes it', () => {
    expect(
      readFileSync(REFERENCE_FILE, 'utf8'),
      'docs/configuration.md is out of date: run npm run docs:config',
    ).toBe(renderConfigReference());
  });
});
