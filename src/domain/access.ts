import { createHash } from 'node:crypto';

/*
 * Who may use the HTTP API (docs/access.md): named credentials, each with one or more roles. A
 * credential is known by the SHA-256 of its token only, so neither ACCESS_FILE nor the process
 * holds a token it could show.
 */

/** What a credential may do (the route table in src/http/route-table.ts says which route needs which). */
export const ROLES = ['metrics', 'viewer', 'submitter', 'operator', 'approver'] as const;
export type Role = (typeof ROLES)[number];

export function isRole(text: string): text is Role {
  return (ROLES as readonly string[]).includes(text);
}

/** A credential's name: what the audit shows as `who`, `submitted_by` and an approval's `name`. */
export const CREDENTIAL_NAME_PATTERN = /^[a-z0-9_.-]{1,40}$/;

export type Credential = {
  readonly name: string;
  readonly roles: readonly Role[];
  /** Lowercase hex SHA-256 of the token. */
  readonly sha256: string;
};

/** The lowercase hex SHA-256 of a token, as ACCESS_FILE stores it. */
export function tokenDigest(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** A credential's line of ACCESS_FILE, as `access token` prints it. */
export function accessFileEntry(credential: Credential): string {
  return `  - { name: ${credential.name}, roles: [${credential.roles.join(', ')}], sha256: ${credential.sha256} }`;
}

/**
 * The credentials named by the three tokens when ACCESS_FILE is not set: HOOK_TOKEN is `hook`
 * (submitter, operator, viewer), APPROVER_TOKEN `approver` (approver, viewer), METRICS_TOKEN
 * `metrics` (metrics).
 */
export const FALLBACK_CREDENTIALS = [
  { variable: 'HOOK_TOKEN', name: 'hook', roles: ['submitter', 'operator', 'viewer'] },
  { variable: 'APPROVER_TOKEN', name: 'approver', roles: ['approver', 'viewer'] },
  { variable: 'METRICS_TOKEN', name: 'metrics', roles: ['metrics'] },
] as const satisfies readonly { variable: string; name: string; roles: readonly Role[] }[];
