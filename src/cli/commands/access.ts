import { randomBytes } from 'node:crypto';
import {
  accessFileEntry,
  CREDENTIAL_NAME_PATTERN,
  isRole,
  ROLES,
  tokenDigest,
  type Credential,
} from '../../domain/access.ts';
import { ValidationError } from '../../domain/errors.ts';
import { EXIT } from '../exit-codes.ts';
import { jsonText } from '../format.ts';
import { parseOptions } from '../options.ts';

const usage = (code: string, message: string) => new ValidationError(`USDC_USAGE_${code}`, message);

/** A token's prefix: it says what the token is to a person, a log scanner or a secret scanner. */
export const TOKEN_PREFIX = 'ubt_';

/**
 * `usdc-batch access token NAME --role ROLE [--role ROLE…] [--json]` (docs/access.md): a fresh
 * random token (256 bits, shown once, stored nowhere) and the ACCESS_FILE entry that names it by
 * its SHA-256. Needs no configuration, Redis or file: nothing is written.
 */
export async function run(args: string[], options: Record<string, unknown>): Promise<number> {
  const [sub, name] = args;
  if (sub !== 'token')
    throw usage('ACCESS_SUBCOMMAND', 'access needs token: usdc-batch access token NAME --role ROLE');
  const flags = parseOptions({ role: 'texts', json: 'flag' }, options);
  const credential = newCredential(name, flags.role);
  const token = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
  const entry = accessFileEntry({ ...credential, sha256: tokenDigest(token) });
  if (flags.json) {
    process.stdout.write(
      `${jsonText({ name: credential.name, roles: credential.roles, token, sha256: tokenDigest(token), entry: entry.trim() })}\n`,
    );
    return EXIT.ok;
  }
  // The token alone on the first line (to copy or to pipe into a secret store), then the entry.
  process.stdout.write(
    `${token}\n${entry}   # add under credentials: in ACCESS_FILE, then send serve SIGHUP; the token is shown only here\n`,
  );
  return EXIT.ok;
}

/** The name and roles given, checked (usage errors, exit 2). */
function newCredential(name: string | undefined, list: readonly string[]): Omit<Credential, 'sha256'> {
  if (name === undefined || !CREDENTIAL_NAME_PATTERN.test(name)) {
    throw usage('ACCESS_NAME', 'NAME must be 1-40 characters of a-z, 0-9, "_", "." or "-"');
  }
  if (list.length === 0) {
    throw usage('ACCESS_ROLE', `give at least one --role: ${ROLES.join(', ')}`);
  }
  const unknown = list.filter((r) => !isRole(r));
  if (unknown.length > 0) {
    throw usage(
      'ACCESS_ROLE',
      `unknown role ${unknown.map((r) => `"${r}"`).join(', ')}: roles are ${ROLES.join(', ')}`,
    );
  }
  return { name, roles: [...new Set(list.filter(isRole))] };
}
