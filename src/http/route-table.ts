import type { Role } from '../domain/access.ts';

/*
 * Which role each route of the API needs (docs/access.md), declared once, here. The app gives
 * every route it registers its entry as it is added (app.ts, `onRoute`) and checks it before the
 * route's handler runs; a route without an entry stops the app from being built, so no route can
 * be added unprotected. OpenAPI states each operation's roles from the same entries (openapi.ts).
 */

/**
 * What a route is for: `public` needs no credential (liveness, bull-board's static files);
 * `metrics` is what a Prometheus scrape needs; `view` every read; `submit` enqueueing; `operate`
 * retry and cancel; `approve` approvals and the address book.
 */
export const ACCESS_LEVELS = ['public', 'metrics', 'view', 'submit', 'operate', 'approve'] as const;
export type Access = (typeof ACCESS_LEVELS)[number];

/** The roles that may use a route of each access level. */
export const ROLES_FOR: Readonly<Record<Access, readonly Role[]>> = {
  public: [],
  metrics: ['metrics', 'viewer', 'submitter', 'operator', 'approver'],
  view: ['viewer', 'submitter', 'operator', 'approver'],
  submit: ['submitter'],
  operate: ['operator'],
  approve: ['approver'],
};

export type RouteRule = {
  /** An HTTP method, or `*` for any. HEAD is looked up as GET. */
  readonly method: string;
  /** The route's path as registered; with `prefix`, every path under it too. */
  readonly url: string;
  readonly prefix?: boolean;
  readonly access: Access;
  /** A page a browser opens: the token may come as the password of HTTP Basic login. */
  readonly login?: boolean;
};

/** Every route of the API and the pages (docs/http-api.md). */
export const ROUTE_TABLE: readonly RouteRule[] = [
  { method: 'GET', url: '/healthz', access: 'public' },
  { method: 'GET', url: '/readyz', access: 'metrics' },
  { method: 'GET', url: '/metrics', access: 'metrics' },
  { method: 'POST', url: '/v1/batches', access: 'submit' },
  { method: 'GET', url: '/v1/batches', access: 'view' },
  { method: 'GET', url: '/v1/batches/:id', access: 'view' },
  { method: 'GET', url: '/v1/batches/:id/export.csv', access: 'view' },
  { method: 'GET', url: '/v1/batches/:id/export.json', access: 'view' },
  { method: 'POST', url: '/v1/batches/:id/retry', access: 'operate' },
  { method: 'POST', url: '/v1/batches/:id/cancel', access: 'operate' },
  { method: 'POST', url: '/v1/batches/:id/approve', access: 'approve' },
  { method: 'GET', url: '/v1/recipients', access: 'view' },
  { method: 'POST', url: '/v1/recipients', access: 'approve' },
  { method: 'DELETE', url: '/v1/recipients', access: 'approve' },
  { method: 'DELETE', url: '/v1/recipients/:address', access: 'approve' },
  { method: 'GET', url: '/v1/audit', access: 'view' },
  { method: 'GET', url: '/v1/treasury', access: 'view' },
  { method: 'GET', url: '/openapi.json', access: 'view' },
  { method: 'GET', url: '/ui', access: 'view', login: true },
  { method: 'GET', url: '/ui/batches/:id', access: 'view', login: true },
  { method: 'GET', url: '/ui/batches/:id/audit', access: 'view', login: true },
  { method: 'GET', url: '/ui/batches/:id/export.csv', access: 'view', login: true },
  { method: 'GET', url: '/ui/treasury', access: 'view', login: true },
  // bull-board's own files, the same in every install: no data, no credential.
  { method: 'GET', url: '/dashboard/static', prefix: true, access: 'public' },
  // bull-board's page and its data routes (any method: all but GET and HEAD are answered 405).
  { method: '*', url: '/dashboard', prefix: true, access: 'view', login: true },
];

/** The entry of a route as registered (`url` with its `:params`); undefined when there is none. */
export function ruleOf(method: string, url: string): RouteRule | undefined {
  const m = method === 'HEAD' ? 'GET' : method;
  const methodMatches = (r: RouteRule) => r.method === '*' || r.method === m;
  const exact = ROUTE_TABLE.find((r) => !r.prefix && r.url === url && methodMatches(r));
  if (exact) return exact;
  // The longest prefix: bull-board's static files before the rest of /dashboard.
  let best: RouteRule | undefined;
  for (const r of ROUTE_TABLE) {
    if (!r.prefix || !methodMatches(r)) continue;
    if (url !== r.url && !url.startsWith(`${r.url}/`)) continue;
    if (!best || r.url.length > best.url.length) best = r;
  }
  return best;
}

/** Whether a credential with these roles may use a route of this access level. */
export function mayUse(roles: readonly Role[], access: Access): boolean {
  return access === 'public' || ROLES_FOR[access].some((r) => roles.includes(r));
}

/** What a 403 says: the roles that may use the route. */
export function rolesText(access: Access): string {
  const roles = ROLES_FOR[access];
  return roles.length === 1 ? `the role ${roles[0]}` : `one of the roles ${roles.join(', ')}`;
}
