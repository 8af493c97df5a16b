import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadLuaScript, LuaScriptError } from '../../src/store/lua-script.ts';

const root = mkdtempSync(join(tmpdir(), 'usdc-batch-lua-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A scripts directory holding `files` (paths relative to it), as the loader's URL. */
function scriptsDir(files: Record<string, string>): URL {
  const dir = mkdtempSync(join(root, 'scripts-'));
  mkdirSync(join(dir, 'includes'));
  for (const [path, text] of Object.entries(files)) writeFileSync(join(dir, path), text);
  return pathToFileURL(`${dir}/`);
}

function loadError(dir: URL, name: string): LuaScriptError {
  try {
    loadLuaScript(dir, name);
  } catch (err) {
    if (err instanceof LuaScriptError) return err;
    throw err;
  }
  throw new Error(`expected ${name} not to load`);
}

describe('loadLuaScript', () => {
  it('replaces include lines by their fragments, and the SHA is the text as sent', () => {
    const dir = scriptsDir({
      'main.lua': '-- main\n--- @include "add"\nreturn add(1, 2)\n',
      'includes/add.lua': 'local function add(a, b) return a + b end\n\n',
    });
    const script = loadLuaScript(dir, 'main.lua');
    expect(script.text).toBe('-- main\nlocal function add(a, b) return a + b end\nreturn add(1, 2)\n');
    expect(script.sha).toBe(createHash('sha1').update(script.text).digest('hex'));
  });

  it('resolves includes of includes, each fragment once, where it is first included', () => {
    const dir = scriptsDir({
      'main.lua': '--- @include "outer"\n--- @include "inner"\nreturn outer()\n',
      'includes/outer.lua': '--- @include "inner"\nlocal function outer() return inner() end\n',
      'includes/inner.lua': 'local function inner() return 1 end\n',
    });
    expect(loadLuaScript(dir, 'main.lua').text).toBe(
      'local function inner() return 1 end\nlocal function outer() return inner() end\n\nreturn outer()\n',
    );
  });

  it('fails at load, naming the script and the file, when an include is missing', () => {
    const dir = scriptsDir({ 'main.lua': '--- @include "absent"\nreturn 1\n' });
    const err = loadError(dir, 'main.lua');
    expect(err.code).toBe('USDC_LUA_SCRIPT');
    expect(err.message).toContain('main.lua includes includes/absent.lua, which cannot be read');
    expect(err.message).toContain('ENOENT');
  });

  it('fails at load on a circle of includes', () => {
    const dir = scriptsDir({
      'main.lua': '--- @include "a"\nreturn 1\n',
      'includes/a.lua': '--- @include "b"\n',
      'includes/b.lua': '--- @include "a"\n',
    });
    expect(loadError(dir, 'main.lua').message).toContain('its includes go round in a circle (a -> b -> a)');
  });

  it('fails at load on an include line it cannot read, rather than leaving it a comment', () => {
    const dir = scriptsDir({ 'main.lua': "--- @include 'single-quoted'\nreturn 1\n" });
    expect(loadError(dir, 'main.lua').message).toContain(
      `the line '--- @include 'single-quoted'' is not '--- @include "name"'`,
    );
  });

  it('fails at load when the script itself is missing', () => {
    expect(loadError(scriptsDir({}), 'nowhere.lua').message).toMatch(/nowhere\.lua cannot be read/);
  });
});
