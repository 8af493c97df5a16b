import { FALLBACK_CREDENTIALS, tokenDigest, type Credential } from '../domain/access.ts';
import { readAccessFile } from './access-file.ts';
import type { NewRecipientPolicy } from './config.ts';
import type { EnvReader, Problem } from './env-reader.ts';

/*
 * The API's credentials (docs/access.md): ACCESS_FILE, or — without it — the three tokens
 * HOOK_TOKEN, APPROVER_TOKEN and METRICS_TOKEN as the credentials `hook`, `approver` and `metrics`.
 */

/** The shortest token or secret accepted (docs/http-api.md): a guessable one is refused at start. */
export const MIN_SECRET_LENGTH = 16;

const BOOK_REASON = 'the address book is vouched for by approvers, never by whoever submits batches';

export type AccessSettings = {
  readonly accessFile: string | undefined;
  /**
   * The credentials `serve` accepts: ACCESS_FILE's (read only by a process that serves, `needs.access`;
   * empty elsewhere) or the fallback tokens' (as digests: no process keeps the token itself).
   */
  readonly credentials: readonly Credential[];
};

/** The settings that decide whether the address book needs an approver (docs/configuration.md "NEW_RECIPIENT_POLICY"). */
export type BookSettings = {
  readonly newRecipientPolicy: NewRecipientPolicy;
  readonly newRecipientMaxUsdc: bigint | undefined;
};

/** A token or secret shorter than MIN_SECRET_LENGTH is a problem saying how to make a good one. */
export function checkSecretLength(r: EnvReader, problem: Problem, name: string): void {
  const v = r.str(name);
  if (v !== undefined && v.length < MIN_SECRET_LENGTH) {
    problem(
      name,
      `is shorter than ${MIN_SECRET_LENGTH} characters: use a random one, e.g. \`openssl rand -hex 32\``,
    );
  }
}

/**
 * ACCESS_FILE or the three tokens. With ACCESS_FILE set the tokens must be unset (one place names
 * every credential); the tokens must differ from each other (two credentials never share a token).
 * `readFile`: this process serves the API, so ACCESS_FILE is read and checked, and at least one
 * credential is required.
 */
export function readAccessSettings(
  r: EnvReader,
  problem: Problem,
  options: { readonly readFile: boolean; readonly book: BookSettings },
): AccessSettings {
  const accessFile = r.str('ACCESS_FILE');
  if (accessFile !== undefined) {
    const set = FALLBACK_CREDENTIALS.filter((f) => r.str(f.variable) !== undefined).map((f) => f.variable);
    if (set.length > 0) {
      problem(
        set.join(', '),
        `must be unset when ACCESS_FILE is set: ACCESS_FILE names every credential (usdc-batch access token makes an entry)`,
      );
    }
    if (!options.readFile) return { accessFile, credentials: [] };
    const read = readAccessFile(accessFile);
    for (const p of read.problems) problem('ACCESS_FILE', p);
    if (read.problems.length === 0) {
      if (read.credentials.length === 0) problem('ACCESS_FILE', 'lists no credential');
      const need = approverNeededFor(read.credentials, options.book);
      if (need)
        problem('ACCESS_FILE', `has no credential with role approver, required with ${need}: ${BOOK_REASON}`);
    }
    return { accessFile, credentials: read.credentials };
  }
  const credentials = fallbackCredentials(r, problem);
  const need = approverNeededFor(credentials, options.book);
  if (need) problem('APPROVER_TOKEN', `is required with ${need}: ${BOOK_REASON}`);
  if (options.readFile && credentials.length === 0) {
    problem(
      'HOOK_TOKEN',
      'is required to authenticate HTTP requests (or APPROVER_TOKEN, METRICS_TOKEN; or ACCESS_FILE for named credentials)',
      true,
    );
  }
  return { accessFile: undefined, credentials };
}

/** HOOK_TOKEN, APPROVER_TOKEN, METRICS_TOKEN as credentials; each checked, all different. */
function fallbackCredentials(r: EnvReader, problem: Problem): Credential[] {
  const credentials: Credential[] = [];
  const seen = new Map<string, string>();
  for (const f of FALLBACK_CREDENTIALS) {
    const token = r.str(f.variable);
    if (token === undefined) continue;
    if (/\s/.test(token)) problem(f.variable, 'must not contain spaces');
    checkSecretLength(r, problem, f.variable);
    const other = seen.get(token);
    if (other !== undefined) {
      problem(f.variable, `must differ from ${other}: two credentials may not share a token`);
      continue;
    }
    seen.set(token, f.variable);
    credentials.push({ name: f.name, roles: f.roles, sha256: tokenDigest(token) });
  }
  return credentials;
}

/**
 * With NEW_RECIPIENT_POLICY `hold` or `reject`, or NEW_RECIPIENT_MAX_USDC, the address book is what
 * stands between a payout and a new address, and only approvers may change it: such a configuration
 * needs a credential with role approver. Returns the setting that needs one when none is there.
 */
export function approverNeededFor(
  credentials: readonly Credential[],
  book: BookSettings,
): string | undefined {
  const setting =
    book.newRecipientPolicy !== 'allow'
      ? `NEW_RECIPIENT_POLICY=${book.newRecipientPolicy}`
      : book.newRecipientMaxUsdc !== undefined
        ? 'NEW_RECIPIENT_MAX_USDC'
        : undefined;
  if (setting === undefined || credentials.some((c) => c.roles.includes('approver'))) return undefined;
  return setting;
}

/** The problem of a configuration that needs an approver and has none (ACCESS_FILE's wording). */
export function approverProblem(credentials: readonly Credential[], book: BookSettings): string | undefined {
  const need = approverNeededFor(credentials, book);
  return need && `ACCESS_FILE has no credential with role approver, required with ${need}: ${BOOK_REASON}`;
}
