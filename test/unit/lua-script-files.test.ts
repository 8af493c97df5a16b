import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { loadLuaScript } from '../../src/store/lua-script.ts';

/*
 * The rule for Lua (docs/data-model.md "Scripts"): every script is a file in a `scripts/` folder
 * next to the TypeScript that runs it, headed by its purpose, Input (KEYS, ARGV) and Output; shared
 * fragments are `scripts/includes/<name>.lua`, pulled in by `--- @include "<name>"`; scripts run by
 * SHA (runScript), and no TypeScript holds Lua text.
 */

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

/** The one runner (EVALSHA, EVAL on NOSCRIPT), and replica-acks.ts, which EVALs loaded files' text in a pipeline. */
const MAY_EVAL = new Set(['store/lua-script.ts', 'store/replica-acks.ts']);

function filesUnder(dir: string, ext: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith(ext))
    .map((f) => join(dir, f))
    .sort();
}

const luaFiles = filesUnder(SRC, '.lua');
const tsFiles = filesUnder(SRC, '.ts');
const scriptFiles = luaFiles.filter((f) => basename(dirname(f)) === 'scripts');
const includeFiles = luaFiles.filter((f) => basename(dirname(f)) === 'includes');
const rel = (f: string) => relative(SRC, f);

/** The leading `--[[ … ]]` block, or undefined when the file does not start with one. */
function headerOf(text: string): string | undefined {
  if (!text.startsWith('--[[\n')) return undefined;
  const end = text.indexOf(']]');
  if (end < 0 || !text.slice(0, end).endsWith('\n') || text[end + 2] !== '\n') return undefined;
  return text.slice(0, end);
}

/** Whether the header declares KEYS[n] (or ARGV[n]): itself, or a range `[m..]` from m <= n. */
function declares(header: string, table: 'KEYS' | 'ARGV', n: number): boolean {
  if (header.includes(`${table}[${n}]`)) return true;
  return [...header.matchAll(new RegExp(`${table}\\[(\\d+)\\.\\.`, 'g'))].some((m) => Number(m[1]) <= n);
}

/** String and template texts of a TypeScript file (the pieces between substitutions of a template). */
function stringsOf(source: ts.SourceFile): string[] {
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) out.push(node.text);
    else if (ts.isTemplateExpression(node)) {
      out.push(node.head.text, ...node.templateSpans.map((s) => s.literal.text));
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/** The calls `<anything>.<method>(…)` and `<function>(…)` of a file, by the name called. */
function callsOf(source: ts.SourceFile): { name: string; node: ts.CallExpression }[] {
  const out: { name: string; node: ts.CallExpression }[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node)) {
      const callee = node.expression;
      if (ts.isPropertyAccessExpression(callee)) out.push({ name: `.${callee.name.text}`, node });
      else if (ts.isIdentifier(callee)) out.push({ name: callee.text, node });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

const sources = tsFiles.map((f) => {
  const source = ts.createSourceFile(f, readFileSync(f, 'utf8'), ts.ScriptTarget.Latest, true);
  return { file: rel(f), dir: dirname(f), source, strings: stringsOf(source) };
});

describe('Lua script files', () => {
  it("finds the scripts of the store (the nonce pool's among them) and of the job hashes", () => {
    const dirs = new Set(scriptFiles.map((f) => rel(dirname(f))));
    expect([...dirs].sort()).toEqual(['queue/scripts', 'store/scripts']);
    expect(scriptFiles.length).toBeGreaterThan(30);
  });

  it('keeps every .lua file in a scripts/ folder or its includes/', () => {
    const stray = luaFiles.filter(
      (f) =>
        !scriptFiles.includes(f) &&
        !(includeFiles.includes(f) && basename(dirname(dirname(f))) === 'scripts'),
    );
    expect(stray.map(rel)).toEqual([]);
  });

  it.each(scriptFiles.map((f) => [rel(f), f]))(
    '%s: headed by Input and Output, its includes resolved',
    (_, file) => {
      const text = readFileSync(file, 'utf8');
      const header = headerOf(text);
      expect(header, 'starts with a --[[ … ]] header').toBeDefined();
      expect(header).toMatch(/\n {2}Input:\n( {4}.*\n)+\n {2}Output:\n {4}\S/);
      const body = text.slice((header ?? '').length);
      for (const [, table, n] of body.matchAll(/\b(KEYS|ARGV)\[(\d+)\]/g)) {
        expect(
          declares(header ?? '', table as 'KEYS' | 'ARGV', Number(n)),
          `${table}[${n}] in the header`,
        ).toBe(true);
      }
      const script = loadLuaScript(pathToFileURL(`${dirname(file)}/`), basename(file));
      expect(script.text).not.toContain('--- @include');
    },
  );

  it.each(includeFiles.map((f) => [rel(f), f]))(
    '%s: headed by what it defines, and included somewhere',
    (_, file) => {
      expect(headerOf(readFileSync(file, 'utf8')), 'starts with a --[[ … ]] header').toBeDefined();
      const name = basename(file, '.lua');
      const scriptsDir = dirname(dirname(file));
      const users = luaFiles.filter(
        (f) => f.startsWith(scriptsDir) && readFileSync(f, 'utf8').includes(`--- @include "${name}"\n`),
      );
      expect(users.length, 'scripts that include it').toBeGreaterThan(0);
    },
  );

  it.each(scriptFiles.map((f) => [rel(f), f]))('%s: loaded by the TypeScript next to it', (_, file) => {
    const owner = dirname(dirname(file));
    const loaders = sources.filter((s) => s.dir === owner && s.strings.includes(basename(file)));
    expect(loaders.length, `a .ts file in ${rel(owner)} names ${basename(file)}`).toBeGreaterThan(0);
  });
});

describe('no Lua in TypeScript', () => {
  const checked = sources;

  it('holds no Lua text in a string or template', () => {
    const inline = checked.flatMap(({ file, strings }) =>
      strings
        .filter((s) => /redis\.p?call\(|\b(KEYS|ARGV)\[\d/.test(s))
        .map((s) => `${file}: ${s.trim().slice(0, 60)}`),
    );
    expect(inline).toEqual([]);
  });

  it('makes scripts only from files: luaScript(text) only in the loader', () => {
    const made = checked.flatMap(({ file, source }) =>
      callsOf(source)
        .filter((c) => c.name === 'luaScript' && file !== 'store/lua-script.ts')
        .map(() => file),
    );
    expect(made).toEqual([]);
  });

  it('sends EVAL only from the runner, and replica-acks.ts only with a loaded script text', () => {
    const evals = checked.flatMap(({ file, source }) =>
      callsOf(source)
        .filter((c) =>
          ['.eval', '.evalsha', '.evalRo', '.evalshaRo', '.script', '.fcall', '.defineCommand'].includes(
            c.name,
          ),
        )
        .map((c) => ({ file, first: c.node.arguments[0]?.getText(source) ?? '' })),
    );
    const stray = evals.filter(
      (e) => !MAY_EVAL.has(e.file) || (e.file === 'store/replica-acks.ts' && !/\.text$/.test(e.first)),
    );
    expect(stray).toEqual([]);
    expect(new Set(evals.map((e) => e.file))).toEqual(MAY_EVAL);
  });
});
