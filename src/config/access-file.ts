import { parseDocument } from 'yaml';
import { CREDENTIAL_NAME_PATTERN, isRole, ROLES, type Credential, type Role } from '../domain/access.ts';
import { readKeyFile } from './key-file.ts';

/*
 * ACCESS_FILE (docs/access.md): the API's credentials, tokens stored as their SHA-256 only.
 *
 *   credentials:
 *     - { name: payroll-hook, roles: [submitter], sha256: 3f2a… }
 *
 * Every problem is reported at once, naming its entry; a file with any problem gives no
 * credentials (`serve` refuses to start with it, and a SIGHUP keeps the credentials it had).
 */

export type AccessFileRead = {
  readonly credentials: readonly Credential[];
  /** Each as `credentials[2] (alice): unknown role "aprover" …`; empty when the file is good. */
  readonly problems: readonly string[];
};

const ENTRY_KEYS = ['name', 'roles', 'sha256'];

/**
 * The SHA-256 of the empty string: what `printf %s "$TOKEN" | sha256sum` prints when `$TOKEN` is
 * unset. As a credential it would open the API to an empty token (`Authorization: Basic x:`).
 */
export const EMPTY_STRING_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** Reads and checks ACCESS_FILE (a regular file of at most 64 KiB). */
export function readAccessFile(file: string): AccessFileRead {
  const read = readKeyFile(file, 'an access file');
  if (!read.ok) return { credentials: [], problems: [`${file} ${read.reason}`] };
  return parseAccessFile(read.text);
}

/** The credentials of an access file's text, or its problems. */
export function parseAccessFile(text: string): AccessFileRead {
  const doc = parseDocument(text.replace(/^\uFEFF/, ''), { uniqueKeys: true });
  const [error] = doc.errors;
  if (error) {
    const at = error.linePos?.[0];
    const message = (error.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
    return {
      credentials: [],
      problems: [`not valid YAML${at ? ` at line ${at.line}, column ${at.col}` : ''}: ${message}`],
    };
  }
  let top: unknown;
  try {
    // No aliases: an access file never needs one, and an alias bomb stops here.
    top = doc.toJS({ maxAliasCount: 0 });
  } catch {
    return { credentials: [], problems: ['must not use YAML aliases (*name)'] };
  }
  if (!isPlainObject(top) || !Array.isArray(top['credentials'])) {
    return { credentials: [], problems: ['must be a mapping with a `credentials:` list'] };
  }
  const problems: string[] = [];
  for (const key of Object.keys(top)) {
    if (key !== 'credentials') problems.push(`unknown key "${clip(key)}" (only credentials)`);
  }
  const read = (top['credentials'] as unknown[]).map((entry, i) => readEntry(entry, i));
  for (const r of read) problems.push(...r.problems);
  problems.push(...duplicates(read));
  if (problems.length > 0) return { credentials: [], problems };
  return { credentials: read.flatMap((r) => (r.credential ? [r.credential] : [])), problems: [] };
}

/** One `credentials[i]` entry: a credential, or its problems (named `credentials[i] (name)`). */
function readEntry(entry: unknown, i: number): { credential?: Credential; problems: string[] } {
  if (!isPlainObject(entry)) {
    return { problems: [`credentials[${i}]: must be a mapping { name, roles, sha256 }`] };
  }
  const { name, roles, sha256 } = entry;
  const label = `credentials[${i}]${typeof name === 'string' ? ` (${clip(name)})` : ''}`;
  const problems: string[] = [];
  for (const key of Object.keys(entry)) {
    if (!ENTRY_KEYS.includes(key)) problems.push(`${label}: unknown key "${clip(key)}"`);
  }
  if (typeof name !== 'string' || !CREDENTIAL_NAME_PATTERN.test(name)) {
    problems.push(`${label}: name must be 1-40 characters of a-z, 0-9, "_", "." or "-"`);
  }
  const roleList = Array.isArray(roles) ? roles : [];
  if (roleList.length === 0) {
    problems.push(`${label}: roles must be a list of one or more of ${ROLES.join(', ')}`);
  }
  for (const role of roleList) {
    if (typeof role !== 'string' || !isRole(role)) {
      problems.push(`${label}: unknown role "${clip(String(role))}" (roles: ${ROLES.join(', ')})`);
    }
  }
  const digest = typeof sha256 === 'string' ? sha256.trim().toLowerCase() : '';
  if (!/^[0-9a-f]{64}$/.test(digest)) {
    problems.push(
      `${label}: sha256 must be 64 hex digits (the SHA-256 of the token: usdc-batch access token)`,
    );
  } else if (digest === EMPTY_STRING_SHA256) {
    problems.push(
      `${label}: sha256 is the SHA-256 of the empty string (what sha256sum prints for an unset variable): make a token with usdc-batch access token`,
    );
  }
  if (problems.length > 0) return { problems };
  return {
    credential: { name: name as string, roles: [...new Set(roleList as Role[])], sha256: digest },
    problems,
  };
}

/** A name or a digest given to two entries (the later one is named). */
function duplicates(read: readonly { readonly credential?: Credential }[]): string[] {
  const problems: string[] = [];
  const names = new Set<string>();
  const digests = new Map<string, string>();
  read.forEach(({ credential: c }, i) => {
    if (!c) return;
    if (names.has(c.name)) problems.push(`credentials[${i}] (${c.name}): the name is used twice`);
    names.add(c.name);
    const other = digests.get(c.sha256);
    if (other !== undefined) {
      problems.push(
        `credentials[${i}] (${c.name}): the same sha256 as ${other}: two credentials may not share a token`,
      );
    } else digests.set(c.sha256, c.name);
  });
  return problems;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A value from the file, cut short and without control characters, for a message. */
function clip(text: string): string {
  return text.slice(0, 60).replace(/[^\x20-\x7e]/g, '?');
}
