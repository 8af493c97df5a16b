import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { beforeAll, describe, expect, it } from 'vitest';

/*
 * The layers of src/ (docs/development.md "Layers") are held by the lint rule `layers/import-layers`
 * (lint/import-layers.js, configured in eslint.config.js). These run ESLint, with the project's own
 * configuration, on snippets placed in src/, so the rule cannot stop working — or be configured away
 * — without a test failing; and they keep the documented table and the configured one the same.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RULE = 'layers/import-layers';

let eslint: ESLint;
beforeAll(() => {
  eslint = new ESLint({ cwd: ROOT });
});

/** The layer rule's messages for `code` as if it were the file `file` (relative to the root). */
async function layerMessages(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(ROOT, file) });
  return (result?.messages ?? []).filter((m) => m.ruleId === RULE).map((m) => m.message);
}

/** The rule's `layers` option as ESLint resolves it for a file of src/. */
async function configuredLayers(): Promise<string[][]> {
  const config = (await eslint.calculateConfigForFile(join(ROOT, 'src/store/probe.ts'))) as {
    rules: Record<string, [number, { layers: string[][] }]>;
  };
  const setting = config.rules[RULE];
  expect(setting?.[0], `${RULE} is an error`).toBe(2);
  return setting![1].layers;
}

describe('import layers (lint)', () => {
  it('fails an import that goes up the layers', async () => {
    const messages = await layerMessages(
      'src/store/probe.ts',
      "import { createProducer } from '../queue/producer.ts';\nexport const p = createProducer;\n",
    );
    expect(messages).toHaveLength(1);
    expect(messages[0]).toContain('src/store may not import src/queue');
  });

  it('counts type imports, re-exports and import() alike', async () => {
    const upward = [
      "import type { TransferJobData } from '../queue/jobs.ts';\nexport type J = TransferJobData;\n",
      "export * from '../pipeline/context.ts';\n",
      "export const app = () => import('../http/app.ts');\n",
    ];
    for (const code of upward) expect(await layerMessages('src/store/probe.ts', code), code).toHaveLength(1);
  });

  it('allows imports down the layers and within a directory', async () => {
    const code =
      "import { createProducer } from './producer.ts';\nimport { loadLuaScript } from '../store/lua-script.ts';\n" +
      "import type { Config } from '../config/config.ts';\nexport const x = [createProducer, loadLuaScript] as const;\nexport type C = Config;\n";
    expect(await layerMessages('src/queue/probe.ts', code)).toEqual([]);
  });

  it('fails an import between directories of one layer', async () => {
    const code =
      "import { runTransfer } from '../pipeline/run-transfer.ts';\nexport const r = runTransfer;\n";
    expect(await layerMessages('src/ingest/probe.ts', code)).toHaveLength(1);
  });

  it('keeps signing and the service client side by side: neither imports the other', async () => {
    const fromSigning =
      "import type { ServiceClient } from '../service/types.ts';\nexport type S = ServiceClient;\n";
    expect(await layerMessages('src/signing/probe.ts', fromSigning)).toHaveLength(1);
    const fromService = "import type { EvmSigner } from '../signing/types.ts';\nexport type E = EvmSigner;\n";
    expect(await layerMessages('src/service/probe.ts', fromService)).toHaveLength(1);
  });

  it('keeps the sandbox apart: only cli imports it, and it imports only domain', async () => {
    const importSandbox = "import type { Sandbox } from '../sandbox/sandbox.ts';\nexport type S = Sandbox;\n";
    expect(await layerMessages('src/cli/probe.ts', importSandbox)).toEqual([]);
    expect(await layerMessages('src/queue/probe.ts', importSandbox)).toEqual([
      'src/sandbox is imported only by cli.',
    ]);
    const importConfig =
      "import { loadConfig } from '../config/load-config.ts';\nexport const l = loadConfig;\n";
    expect(await layerMessages('src/sandbox/probe.ts', importConfig)).toHaveLength(1);
  });

  it('gives every directory of src/ a layer, and fails one that has none', async () => {
    const directories = readdirSync(join(ROOT, 'src'), { withFileTypes: true }).filter((d) =>
      d.isDirectory(),
    );
    const layers = (await configuredLayers()).flat();
    expect(directories.map((d) => d.name).sort()).toEqual([...layers].sort());
    expect(await layerMessages('src/unplaced/probe.ts', 'export const x = 1;\n')).toEqual([
      'src/unplaced has no layer: give it one in eslint.config.js (LAYERS) and docs/development.md "Layers".',
    ]);
  });

  it('documents the layers it checks (docs/development.md "Layers")', async () => {
    const page = readFileSync(join(ROOT, 'docs/development.md'), 'utf8');
    const section = page.split(/^## /m).find((s) => s.startsWith('Layers\n'));
    expect(section, 'docs/development.md has a "Layers" section').toBeDefined();
    const documented = [...section!.matchAll(/^\| \d+ \| ([^|]+) \|/gm)].map((m) =>
      [...m[1]!.matchAll(/`([^`]+)`/g)].map((d) => d[1]),
    );
    expect(documented).toEqual(await configuredLayers());
  });
});
