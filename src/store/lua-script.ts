import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';

/** A Lua script sent by its SHA (EVALSHA), with its text as the fallback when Redis lacks it. */
export type LuaScript = { readonly text: string; readonly sha: string };

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

/**
 * A script of `src/store/scripts/` (one file per script, headed by its KEYS, ARGV and output), read
 * once when the module that runs it is loaded. A line `--- @include "name"` (BullMQ's notation) is
 * replaced by the fragment `scripts/includes/name.lua`: functions several scripts share.
 */
export function luaScriptFile(name: string): LuaScript {
  return luaScript(withIncludes(readScript(name)));
}

function readScript(path: string): string {
  return readFileSync(new URL(`./scripts/${path}`, import.meta.url), 'utf8');
}

/** The text with each `--- @include "name"` line replaced by its fragment (once each, no nesting). */
function withIncludes(text: string): string {
  return text.replace(/^--- @include "([a-z0-9-]+)"$/gm, (_line, name: string) =>
    readScript(`includes/${name}.lua`).trimEnd(),
  );
}
