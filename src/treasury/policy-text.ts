import { isAlias, isMap, isScalar, isSeq, parseDocument, type Document } from 'yaml';

/*
 * A policy file's text as values (docs/rebalancing.md): YAML, or JSON read by the same
 * YAML reader once JSON itself has accepted it. Numbers stay the text the file wrote — an amount
 * never goes through a float (9007199254740993 stays …993), and `0x10`, `0o777` or `1e3` stay what
 * they look like, for the rules to refuse. A key given twice is a problem naming it (JSON.parse and
 * YAML's `toJS` keep one of the two without a word).
 */

/** A number as the file wrote it (`5000`, `12.50`, `0x10`, `1e3`): its text, never a float. */
export class NumberText {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

export type PolicyMap = ReadonlyMap<string, PolicyValue>;
/** Text, a number as written, true/false, empty (null), a list or a mapping. */
export type PolicyValue = string | NumberText | boolean | null | readonly PolicyValue[] | PolicyMap;

export type PolicyText =
  | { readonly ok: true; readonly value: PolicyValue; readonly problems: readonly string[] }
  | { readonly ok: false; readonly problems: readonly string[] };

/** Nesting and node count a policy never needs: an alias bomb stops here. */
const MAX_DEPTH = 16;
const MAX_NODES = 10_000;

/** The file's values, with the keys given twice as problems; or its syntax error. */
export function readPolicyText(text: string, json: boolean): PolicyText {
  if (json) {
    try {
      JSON.parse(text);
    } catch (err) {
      return { ok: false, problems: [`(file): not valid JSON: ${(err as Error).message}`] };
    }
  }
  const doc = parseDocument(text, { uniqueKeys: false });
  const [error] = doc.errors;
  if (error) {
    const at = error.linePos?.[0];
    const message = (error.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
    const where = at ? ` at line ${at.line}, column ${at.col}` : '';
    return { ok: false, problems: [`(file): not valid ${json ? 'JSON' : 'YAML'}${where}: ${message}`] };
  }
  const walk: Walk = { doc, problems: [], nodes: 0 };
  const value = valueOf(walk, doc.contents, [], 0);
  return { ok: true, value, problems: walk.problems };
}

type Walk = { readonly doc: Document; readonly problems: string[]; nodes: number };

/** `chains.ARB.min`, as the rules name a key. */
export function keyPath(path: readonly string[]): string {
  return path.join('.') || '(file)';
}

function valueOf(walk: Walk, node: unknown, path: readonly string[], depth: number): PolicyValue {
  if (++walk.nodes > MAX_NODES || depth > MAX_DEPTH) {
    if (!walk.problems.includes('(file): nested too deep or too large for a policy'))
      walk.problems.push('(file): nested too deep or too large for a policy');
    return null;
  }
  if (isAlias(node)) return valueOf(walk, node.resolve(walk.doc), path, depth + 1);
  if (isScalar(node)) return scalarValue(node.value, node.source);
  if (isSeq(node)) return node.items.map((item) => valueOf(walk, item, path, depth + 1));
  if (isMap(node)) {
    const map = new Map<string, PolicyValue>();
    const twice = new Set<string>();
    for (const pair of node.items) {
      const key = keyText(pair.key);
      if (key === undefined) {
        walk.problems.push(`${keyPath(path)}: a key must be a name`);
        continue;
      }
      if (map.has(key)) {
        if (!twice.has(key)) walk.problems.push(`${keyPath([...path, key])}: is given twice`);
        twice.add(key);
        continue;
      }
      map.set(key, valueOf(walk, pair.value, [...path, key], depth + 1));
    }
    return map;
  }
  return null;
}

function scalarValue(value: unknown, source: string | undefined): PolicyValue {
  if (typeof value === 'number' || typeof value === 'bigint') return new NumberText(source ?? String(value));
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  return null;
}

/** A mapping key as the file wrote it; undefined for a key that is a list or a mapping. */
function keyText(key: unknown): string | undefined {
  if (isAlias(key) || !isScalar(key)) return undefined;
  if (typeof key.value === 'string') return key.value;
  return key.source ?? String(key.value);
}
