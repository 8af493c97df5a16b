import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/*
 * Every key a Lua script touches is declared in its KEYS (docs/scaling.md "Redis Cluster"): a
 * cluster routes a script by its KEYS, and a key a script builds itself (from a prefix in ARGV, or
 * from data it read) is invisible to that routing. A static check over src/**\/scripts: the key
 * argument of every `redis.call`/`redis.pcall` must be `KEYS[…]`, a local assigned from `KEYS[…]`,
 * or a parameter of a function (an include's) that every caller passes such a key.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIRS = ['src/store/scripts', 'src/store/scripts/includes', 'src/queue/scripts'];

/** Commands whose first argument is not a key. */
const KEYLESS = new Set(['INFO', 'PUBLISH', 'TIME', 'PING', 'ECHO']);

/**
 * Key arguments the rules below cannot follow, each checked by reading its script: none builds a
 * key name.
 */
const READ_BY_EYE: Record<string, string> = {
  // pairs_ holds KEYS[j + 1] and its value, alternately.
  'payout-claim.lua MSET unpack(pairs_)': 'keys from KEYS',
  // stateSet looks a state up in stateSets(first, last), built from KEYS[first..last] only.
  'move-transfer.lua ZREM stateSet(k.states, cur)': 'keys from KEYS',
  'move-transfer.lua ZADD stateSet(k.states, to)': 'keys from KEYS',
};

type Script = { readonly file: string; readonly text: string };

function scripts(): Script[] {
  return DIRS.flatMap((dir) =>
    readdirSync(join(ROOT, dir))
      .filter((f) => f.endsWith('.lua'))
      .map((f) => ({
        file: f,
        // Comments out: headers name keys in prose.
        text: readFileSync(join(ROOT, dir, f), 'utf8')
          .replace(/--\[\[[\s\S]*?\]\]/g, '')
          .replace(/--.*$/gm, ''),
      })),
  );
}

/** The top-level arguments of the call whose '(' is just before `from`. */
function callArgs(text: string, from: number): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  let quote: string | undefined;
  for (let i = from; i < text.length; i++) {
    const c = text[i] as string;
    if (quote) {
      cur += c;
      if (c === quote && text[i - 1] !== '\\') quote = undefined;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
    } else if ('([{'.includes(c)) {
      depth++;
    } else if (')]}'.includes(c)) {
      if (depth === 0) {
        out.push(cur.trim());
        return out;
      }
      depth--;
    } else if (c === ',' && depth === 0) {
      out.push(cur.trim());
      cur = '';
      continue;
    }
    cur += c;
  }
  return out;
}

const FROM_KEYS = /^(KEYS\[[^\]]+\]|unpack\(KEYS\b)/;

/** Whether `name` is assigned only from KEYS in `text` (and assigned at all). */
function assignedFromKeys(text: string, name: string): boolean | undefined {
  const found = [...text.matchAll(new RegExp(`(?:local\\s+)?\\b${name}\\s*=(?!=)\\s*([^\\n]+)`, 'g'))];
  if (found.length === 0) return undefined;
  return found.every((m) => FROM_KEYS.test((m[1] as string).trim()));
}

/** Whether the table `name` is filled only with keys from KEYS (`name[x] = KEYS[…]`). */
function tableOfKeys(text: string, name: string): boolean {
  const stores = [
    ...text.matchAll(new RegExp(`\\b${name}\\[(?:[^[\\]]|\\[[^\\]]*\\])+\\]\\s*=(?!=)\\s*([^\\n]+)`, 'g')),
  ];
  return stores.length > 0 && stores.every((m) => FROM_KEYS.test((m[1] as string).trim()));
}

/** The function defined last before `pos` in `text`, if `name` is one of its parameters: its place. */
function parameterOf(text: string, name: string, pos: number): { fn: string; at: number } | undefined {
  let last: { fn: string; params: string[] } | undefined;
  for (const m of text.matchAll(/function\s+([A-Za-z_][\w]*)\s*\(([^)]*)\)/g)) {
    if ((m.index ?? 0) > pos) break;
    last = { fn: m[1] as string, params: (m[2] as string).split(',').map((p) => p.trim()) };
  }
  const at = last?.params.indexOf(name) ?? -1;
  return last && at >= 0 ? { fn: last.fn, at } : undefined;
}

/**
 * Whether the key expression `key` at `pos` of `text` comes from KEYS: `KEYS[…]` itself, a local
 * assigned from it, or a parameter (or a field `field` of a table parameter) that every caller of
 * its function passes from KEYS, followed up to a few calls deep.
 */
function fromKeys(all: Script[], text: string, key: string, pos: number, depth = 0): boolean {
  if (FROM_KEYS.test(key)) return true;
  if (depth > 4) return false;
  const entry = /^([A-Za-z_]\w*)\[[^\]]+\]$/.exec(key);
  if (entry) return tableOfKeys(text, entry[1] as string);
  const ident = /^([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?$/.exec(key);
  if (!ident) return false;
  const [, name = '', field] = ident;
  const param = parameterOf(text, name, pos);
  if (!param) return !field && assignedFromKeys(text, name) === true;
  let calls = 0;
  for (const s of all) {
    for (const m of s.text.matchAll(new RegExp(`(?<!function\\s)\\b${param.fn}\\(`, 'g'))) {
      calls++;
      const at = (m.index ?? 0) + m[0].length;
      const arg = callArgs(s.text, at)[param.at] ?? '';
      const passed = field ? new RegExp(`\\b${field}\\s*=\\s*([^,}]+)`).exec(arg)?.[1]?.trim() : arg;
      if (passed === undefined || !fromKeys(all, s.text, passed, at, depth + 1)) return false;
    }
  }
  return calls > 0;
}

function undeclaredKeys(): string[] {
  const all = scripts();
  const out: string[] = [];
  for (const s of all) {
    for (const m of s.text.matchAll(/redis\.p?call\(/g)) {
      const [command = '', key = ''] = callArgs(s.text, (m.index ?? 0) + m[0].length);
      const cmd = /^'([A-Za-z]+)'$/.exec(command)?.[1]?.toUpperCase();
      if (cmd === undefined) {
        out.push(`${s.file}: a command named at run time (${command})`);
        continue;
      }
      if (KEYLESS.has(cmd) || FROM_KEYS.test(key)) continue;
      if (READ_BY_EYE[`${s.file} ${cmd} ${key}`]) continue;
      if (fromKeys(all, s.text, key, m.index ?? 0)) continue;
      out.push(`${s.file}: ${cmd} ${key}`);
    }
  }
  return out;
}

describe('Lua scripts declare every key they touch in KEYS (Redis Cluster)', () => {
  it('finds no key argument of redis.call that does not come from KEYS', () => {
    expect(undeclaredKeys()).toEqual([]);
  });

  it('would find a key built from a prefix in ARGV', () => {
    const text = "local key = ARGV[1] .. ':t:' .. id\nredis.call('HGET', key, 'state')";
    expect(assignedFromKeys(text, 'key')).toBe(false);
    expect(FROM_KEYS.test("ARGV[1] .. ':x'")).toBe(false);
    expect(FROM_KEYS.test('KEYS[3 + i]')).toBe(true);
  });
});
