/*
 * Failed authentication slows its client down (docs/http-api.md): a client address that fails
 * authentication `limit` times within `windowMs` is answered 429, with Retry-After, on every route
 * that needs a credential for `blockMs` — whatever it sends meanwhile but a valid credential, so
 * guessing cannot go on during the pause while the right token (a Prometheus scrape, a colleague
 * behind the same proxy) is never refused. The client is the connection's address, or the one
 * X-Forwarded-For names when the connection comes from HTTP_TRUSTED_PROXIES. The count lives in the
 * `serve` process (no Redis round trip on a refused request) and holds at most `maxClients`
 * addresses: a flood of addresses forgets the oldest first.
 */

export type AuthFailureLimits = {
  /** Failures within the window that block a client (HTTP_AUTH_FAILURE_LIMIT); 0 never blocks. */
  readonly limit: number;
  readonly windowMs: number;
  /** How long a blocked client is answered 429. */
  readonly blockMs: number;
  /** Addresses remembered at most. */
  readonly maxClients: number;
};

export const AUTH_FAILURE_LIMITS: AuthFailureLimits = {
  limit: 20,
  windowMs: 60_000,
  blockMs: 60_000,
  maxClients: 10_000,
};

type ClientFailures = {
  /** Times of the failures within the window, oldest first (at most `limit`). */
  times: number[];
  /** Blocked until this time (ms); 0 when not blocked. */
  blockedUntil: number;
};

export type AuthFailures = {
  readonly limits: AuthFailureLimits;
  readonly clients: Map<string, ClientFailures>;
};

export function createAuthFailures(limits: AuthFailureLimits = AUTH_FAILURE_LIMITS): AuthFailures {
  return { limits, clients: new Map() };
}

/** How long `client` is still blocked, in ms (0 when it is not). */
export function blockedFor(failures: AuthFailures, client: string, now: number): number {
  const entry = failures.clients.get(client);
  if (!entry || entry.blockedUntil <= now) return 0;
  return entry.blockedUntil - now;
}

/** Counts a failed authentication of `client`; the `limit`-th within the window blocks it. */
export function noteAuthFailure(failures: AuthFailures, client: string, now: number): void {
  const { limits, clients } = failures;
  if (limits.limit === 0) return;
  let entry = clients.get(client);
  if (!entry) {
    if (clients.size >= limits.maxClients) forgetOldest(failures, now);
    entry = { times: [], blockedUntil: 0 };
    clients.set(client, entry);
  }
  if (entry.blockedUntil > now) return;
  entry.times = entry.times.filter((t) => now - t < limits.windowMs);
  entry.times.push(now);
  if (entry.times.length >= limits.limit) {
    entry.blockedUntil = now + limits.blockMs;
    entry.times = [];
  }
}

/** Drops the entries with nothing left to remember, else the oldest one. */
function forgetOldest(failures: AuthFailures, now: number): void {
  const { limits, clients } = failures;
  for (const [client, entry] of clients) {
    const stale = entry.blockedUntil <= now && entry.times.every((t) => now - t >= limits.windowMs);
    if (stale) clients.delete(client);
  }
  if (clients.size >= limits.maxClients) {
    const oldest = clients.keys().next().value;
    if (oldest !== undefined) clients.delete(oldest);
  }
}
