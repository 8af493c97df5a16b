import { createHash } from 'node:crypto';

/*
 * AUDIT_LOG_FILE's hash chain (docs/audit.md, docs/audit.md). Each line is one JSON object: an
 * audit entry's fields (`id`, `at`, `who`, `action`, `batch`, `detail`), `prev` — the previous
 * line's `hash`, 64 zeros on the first line — and `hash`:
 *
 *   hash = lowercase hex SHA-256 of the UTF-8 bytes of the canonical JSON of the line without `hash`
 *
 * where canonical JSON is the object with its keys sorted (recursively, by code point), no
 * whitespace, strings escaped as JSON.stringify does — what Python's `json.dumps(obj,
 * sort_keys=True, separators=(',', ':'), ensure_ascii=False)` writes for these values. A line
 * removed, added or changed anywhere breaks the chain at or after it; a tail cut off is found by
 * comparing the last `hash` with one kept elsewhere.
 */

/** `prev` of the first line. */
export const GENESIS_HASH = '0'.repeat(64);

/** The fields of a line before its `hash` is computed. */
export type AuditLineFields = Readonly<Record<string, unknown>> & { readonly prev: string };

/** JSON with keys sorted at every level and no whitespace. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** The `hash` of a line with these fields (its `hash` field, if any, left out). */
export function auditLineHash(fields: Readonly<Record<string, unknown>>): string {
  const { hash: _ignored, ...rest } = fields;
  return createHash('sha256').update(canonicalJson(rest), 'utf8').digest('hex');
}

/** The line to append: the fields, then `prev` and `hash`, as one line of JSON (no newline). */
export function auditLine(fields: Readonly<Record<string, unknown>>, prev: string): string {
  const withPrev = { ...fields, prev };
  return JSON.stringify({ ...withPrev, hash: auditLineHash(withPrev) });
}

/** What a check of the chain found so far. */
export type ChainCheck = {
  /** Lines read (blank lines are not counted). */
  lines: number;
  /** The `hash` of the last line that checked out (GENESIS_HASH before the first). */
  lastHash: string;
  /** The first line that does not check out, and why; undefined while all do. */
  bad: { readonly line: number; readonly reason: string } | undefined;
};

export function startChainCheck(): ChainCheck {
  return { lines: 0, lastHash: GENESIS_HASH, bad: undefined };
}

/**
 * Checks the next line of the file (its 1-based number `lineNo`) against the chain so far; records
 * the first line that does not check out and ignores every line after it.
 */
export function checkChainLine(check: ChainCheck, lineNo: number, text: string): void {
  if (check.bad) return;
  if (text.trim() === '') return;
  check.lines++;
  const bad = lineProblem(text, check.lastHash);
  if (bad.reason !== undefined) check.bad = { line: lineNo, reason: bad.reason };
  else check.lastHash = bad.hash;
}

function lineProblem(text: string, expectedPrev: string): { reason?: string; hash: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { reason: 'is not JSON (a line cut short, or not an audit line)', hash: '' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { reason: 'is not a JSON object', hash: '' };
  }
  const fields = value as Record<string, unknown>;
  if (typeof fields['hash'] !== 'string' || typeof fields['prev'] !== 'string') {
    return { reason: 'has no prev and hash', hash: '' };
  }
  if (fields['prev'] !== expectedPrev) {
    return {
      reason:
        expectedPrev === GENESIS_HASH
          ? `its prev is not 64 zeros, as the first line's is: a line before it is missing`
          : `its prev ${String(fields['prev']).slice(0, 16)}… is not the hash of the line before (${expectedPrev.slice(0, 16)}…): a line was removed, added or changed before it`,
      hash: '',
    };
  }
  const hash = auditLineHash(fields);
  if (hash !== fields['hash']) {
    return {
      reason: `its hash does not match its content (computed ${hash.slice(0, 16)}…): the line was changed`,
      hash: '',
    };
  }
  return { hash };
}
