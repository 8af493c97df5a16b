import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ADD_SANDBOX_PACKAGES,
  loadSandboxModule,
  missingSandboxMessage,
  missingSandboxPackages,
  SANDBOX_PACKAGES,
} from '../../src/cli/sandbox-packages.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  optionalDependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

describe('the sandbox packages are optional dependencies', () => {
  it('anvil and LiteSVM are optional, the compiler and test tools dev-only', () => {
    for (const name of SANDBOX_PACKAGES) {
      expect(pkg.optionalDependencies[name], name).toBeDefined();
      expect(pkg.dependencies[name], name).toBeUndefined();
    }
    for (const name of ['solc', 'playwright-core', 'testcontainers', '@openzeppelin/contracts']) {
      expect(pkg.devDependencies[name], name).toBeDefined();
    }
  });

  it('finds them in this install, and names each one a resolver cannot find', () => {
    expect(missingSandboxPackages()).toEqual([]);
    const without = (gone: string) => (name: string) => {
      if (name === gone) throw Object.assign(new Error(`Cannot find ${name}`), { code: 'MODULE_NOT_FOUND' });
      return `/x/${name}`;
    };
    expect(missingSandboxPackages(without('litesvm'))).toEqual(['litesvm']);
    expect(missingSandboxPackages(without('@foundry-rs/anvil'))).toEqual(['@foundry-rs/anvil']);
    const message = missingSandboxMessage('sandbox', ['@foundry-rs/anvil', 'litesvm']);
    expect(message).toContain('usdc-batch sandbox');
    expect(message).toContain('@foundry-rs/anvil, litesvm');
    expect(message.endsWith(`Add them with: ${ADD_SANDBOX_PACKAGES}`)).toBe(true);
  });

  it('loads no sandbox module when a package is missing', async () => {
    const writes: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((s: string) => writes.push(String(s)) > 0) as typeof process.stderr.write;
    try {
      const mod = await loadSandboxModule('demo', (name) => {
        if (name === 'litesvm') throw new Error('not found');
        return name;
      });
      expect(mod).toBeUndefined();
    } finally {
      process.stderr.write = write;
    }
    expect(writes.join('')).toContain(`usdc-batch demo needs the sandbox's local chains (litesvm)`);
  });
});

/**
 * A copy of the project whose node_modules links every installed package except the optional
 * ones (and the platform packages they bring): what `npm ci --omit=optional` leaves.
 */
function leanCopy(dir: string): string {
  for (const part of ['bin', 'src', 'workers', 'samples', 'package.json']) {
    cpSync(join(ROOT, part), join(dir, part), { recursive: true });
  }
  const left = (name: string) =>
    SANDBOX_PACKAGES.some((p) => name === p) ||
    name.startsWith('litesvm-') ||
    name.startsWith('@foundry-rs/anvil-');
  const modules = join(dir, 'node_modules');
  for (const entry of readdirSync(join(ROOT, 'node_modules'))) {
    if (entry.startsWith('.')) continue;
    const names = entry.startsWith('@')
      ? readdirSync(join(ROOT, 'node_modules', entry)).map((n) => `${entry}/${n}`)
      : [entry];
    for (const name of names) {
      if (left(name)) continue;
      mkdirSync(dirname(join(modules, name)), { recursive: true });
      symlinkSync(join(ROOT, 'node_modules', name), join(modules, name));
    }
  }
  return dir;
}

describe('usdc-batch sandbox and demo on an install without the sandbox packages', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'usdc-batch-lean-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));
  const project = leanCopy(scratch);

  it.each(['sandbox', 'demo'])('%s exits 2 and says the one command that adds them', (command) => {
    const r = spawnSync(process.execPath, [join(project, 'bin/usdc-batch.js'), command], {
      cwd: project,
      encoding: 'utf8',
      timeout: 30_000,
      env: { PATH: process.env['PATH'] ?? '', HOME: scratch },
    });
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toContain(`usdc-batch ${command} needs the sandbox's local chains`);
    expect(r.stderr).toContain('@foundry-rs/anvil, litesvm');
    expect(r.stderr).toContain(`Add them with: ${ADD_SANDBOX_PACKAGES}`);
    expect(r.stdout).toBe('');
  });

  it('the worker still loads there (its configuration error, not a missing module)', () => {
    const r = spawnSync(process.execPath, [join(project, 'bin/usdc-batch.js'), 'worker'], {
      cwd: project,
      encoding: 'utf8',
      timeout: 30_000,
      env: { PATH: process.env['PATH'] ?? '', HOME: scratch },
    });
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toContain('TRANSFER_API_URL');
    expect(r.stderr).not.toMatch(/Cannot find (module|package)/);
  });
});

/** What a file imports (`import … from`, `export … from`, side-effect and literal `import()`), type-only imports excluded. */
function staticImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found: string[] = [];
  for (const m of text.matchAll(/^\s*(import|export)\s+(type\s+)?([^'";]*?)\s*from\s*'([^']+)'/gms)) {
    if (m[2]) continue;
    found.push(m[4] as string);
  }
  for (const m of text.matchAll(/^\s*import\s+'([^']+)'/gm)) found.push(m[1] as string);
  // Modules loaded on demand with a literal path run in production too (enqueue's service client);
  // the one exception is the sandbox, which loadSandboxModule loads only after checking its packages.
  if (!file.endsWith('src/cli/sandbox-packages.ts')) {
    for (const m of text.matchAll(/\bimport\('([^']+)'\)/g)) found.push(m[1] as string);
  }
  return found;
}

const packageName = (spec: string) =>
  spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : (spec.split('/')[0] as string);

/** Every file reached by static imports from `entries`, with the packages each imports. */
function reach(entries: string[]): Map<string, string[]> {
  const seen = new Map<string, string[]>();
  const queue = [...entries];
  while (queue.length > 0) {
    const file = queue.pop() as string;
    if (seen.has(file)) continue;
    const imports = staticImports(file);
    seen.set(
      file,
      imports.filter((s) => !s.startsWith('.')),
    );
    for (const s of imports.filter((x) => x.startsWith('.'))) queue.push(resolve(dirname(file), s));
  }
  return seen;
}

describe('production code imports no optional or dev package', () => {
  // The entries of a production process: the CLI, the image's entry points, and every command but
  // the two that run the sandbox (main.ts loads each command on demand).
  const commands = readdirSync(join(ROOT, 'src/cli/commands'))
    .filter((f) => f.endsWith('.ts') && f !== 'sandbox.ts' && f !== 'demo.ts')
    .map((f) => join(ROOT, 'src/cli/commands', f));
  const entries = [
    join(ROOT, 'src/cli/main.ts'),
    join(ROOT, 'workers/worker.ts'),
    join(ROOT, 'workers/api.ts'),
    ...commands,
  ];
  const reached = reach(entries);
  const builtins = new Set(builtinModules);

  it('reaches the worker, the API and the commands through static imports', () => {
    expect(commands.length).toBeGreaterThan(10);
    expect([...reached.keys()].some((f) => f.endsWith('src/queue/worker-runtime.ts'))).toBe(true);
    for (const f of reached.keys()) expect(existsSync(f), f).toBe(true);
  });

  it('never reaches src/sandbox, and imports only production dependencies', () => {
    const offenders: string[] = [];
    for (const [file, packages] of reached) {
      const rel = relative(ROOT, file);
      if (rel.startsWith('src/sandbox/')) offenders.push(`${rel} is reached`);
      for (const spec of packages) {
        if (spec.startsWith('node:') || builtins.has(spec)) continue;
        if (!pkg.dependencies[packageName(spec)]) offenders.push(`${rel} imports ${spec}`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it('the sandbox and demo commands load the sandbox only after checking its packages', () => {
    for (const f of ['src/cli/commands/sandbox.ts', 'src/cli/commands/demo.ts']) {
      const reachedFromIt = reach([join(ROOT, f)]);
      const sandboxFiles = [...reachedFromIt.keys()].filter((x) =>
        relative(ROOT, x).startsWith('src/sandbox/'),
      );
      expect(sandboxFiles, f).toEqual([]);
      expect(readFileSync(join(ROOT, f), 'utf8')).toContain('loadSandboxModule(');
    }
  });
});
