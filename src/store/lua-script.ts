import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { UsdcBatchError } from '../domain/errors.ts';

/** A Lua script sent by its SHA (EVALSHA), with its text as the fallback when Redis lacks it. */
export type LuaScript = { readonly text: string; readonly sha: string };

/** A script file that cannot be loaded: a missing file or include, a bad or circular include line. */
export class LuaScriptError extends UsdcBatchError {
  override name = 'LuaScriptError';
}

/** A script from its text: only for the loader below. */
export function luaScript(text: string): LuaScript {
  return { text, sha: createHash('sha1').update(text).digest('hex') };
}

/** Runs a script by SHA; after a Redis restart (or on a fresh server) its text loads it again. */
export async function runScript(
  redis: Redis,
  script: LuaScript,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<unknown> {
  try {
    return await redis.evalsha(script.sha, keys.length, ...keys, ...args);
  } catch (err) {
    if (err instanceof Error && err.message.startsWith('NOSCRIPT')) {
      return await redis.eval(script.text, keys.length, ...keys, ...args);
    }
    throw err;
  }
}

/** The store's scripts: `src/store/scripts/`. */
const STORE_SCRIPTS = new URL('./scripts/', import.meta.url);

/** A script of `src/store/scripts/` (see loadLuaScript). */
export function luaScriptFile(name: string): LuaScript {
  return loadLuaScript(STORE_SCRIPTS, name);
}

/**
 * A script file of the directory `dir` (a file URL ending in '/'; one file per script, headed by
 * its KEYS, ARGV and output), read once when the module that runs it is loaded. A line
 * `--- @include "name"` (BullMQ's notation) is replaced by the fragment `includes/name.lua` of the
 * same directory (functions several scripts share); a fragment may include others. Each fragment
 * comes in once per script, where it is first included (a later include of it adds nothing), so a
 * script may name every fragment it uses. A missing fragment, a malformed include line or a circle
 * of includes throws here, when the script loads, not when it first runs.
 */
export function loadLuaScript(dir: URL, name: string): LuaScript {
  return luaScript(withIncludes(dir, name, readScript(dir, name, name), new Set(), []));
}

const INCLUDE_LINE = /^--- @include\b.*$/gm;
const INCLUDE = /^--- @include "([a-z0-9-]+)"$/;

function readScript(dir: URL, path: string, script: string): string {
  const url = new URL(path, dir);
  try {
    return readFileSync(url, 'utf8');
  } catch (err) {
    const what = path === script ? 'cannot be read' : `includes ${path}, which cannot be read`;
    throw new LuaScriptError('USDC_LUA_SCRIPT', `Lua script ${fileURLToPath(new URL(script, dir))} ${what}`, {
      details: `${fileURLToPath(url)}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
      cause: err,
    });
  }
}

/**
 * The text with each include line replaced by its fragment (its own includes resolved first);
 * `seen` holds the fragments this script has already, `stack` the ones being resolved.
 */
function withIncludes(
  dir: URL,
  script: string,
  text: string,
  seen: Set<string>,
  stack: readonly string[],
): string {
  return text.replace(INCLUDE_LINE, (line) => {
    const name = INCLUDE.exec(line)?.[1];
    if (name === undefined) {
      throw new LuaScriptError(
        'USDC_LUA_SCRIPT',
        `Lua script ${fileURLToPath(new URL(script, dir))}: the line '${line}' is not '--- @include "name"' (lower case, digits and '-')`,
      );
    }
    if (stack.includes(name)) {
      throw new LuaScriptError(
        'USDC_LUA_SCRIPT',
        `Lua script ${fileURLToPath(new URL(script, dir))}: its includes go round in a circle (${[...stack, name].join(' -> ')})`,
      );
    }
    if (seen.has(name)) return '';
    seen.add(name);
    const fragment = readScript(dir, `includes/${name}.lua`, script);
    return withIncludes(dir, script, fragment, seen, [...stack, name]).trimEnd();
  });
}
