import { isIP } from 'node:net';
import { isHostName } from './host-name.ts';

/**
 * One CALLBACK_ALLOWED_HOSTS entry: `host` or `host:port` (an IPv6 address in brackets when it has a
 * port: `[::1]:8080`). `port` undefined means the default port of the callback's scheme only.
 */
export type AllowedHost = { readonly host: string; readonly port: number | undefined };

/** Parses an allow-list entry (case-insensitive); undefined when it is not `host` or `host:port`. */
export function parseAllowedHost(entry: string): AllowedHost | undefined {
  const text = entry.trim().toLowerCase();
  let host = text;
  let portText: string | undefined;
  const bracketed = /^\[([^\]]+)\](?::([0-9]+))?$/.exec(text);
  if (bracketed) {
    host = bracketed[1] as string;
    portText = bracketed[2];
    if (isIP(host) !== 6) return undefined;
  } else if (isIP(text) === 6) {
    // A bare IPv6 address: its colons are not a port.
    host = text;
  } else {
    const colon = text.lastIndexOf(':');
    if (colon !== -1) {
      host = text.slice(0, colon);
      portText = text.slice(colon + 1);
    }
    if (isIP(host) !== 4 && !isHostName(host)) return undefined;
  }
  if (portText === undefined) return { host, port: undefined };
  if (!/^[0-9]{1,5}$/.test(portText)) return undefined;
  const port = Number(portText);
  return port >= 1 && port <= 65_535 ? { host, port } : undefined;
}

/** The longest callback_url accepted, checked before it is parsed. */
export const CALLBACK_URL_MAX_LENGTH = 2048;

const DEFAULT_PORTS: Readonly<Record<string, number>> = { 'http:': 80, 'https:': 443 };

/**
 * Why a `callback_url` may not be called, or undefined when it may. Its host must be listed in
 * CALLBACK_ALLOWED_HOSTS: a bare host allows only the scheme's default port (443 for https), a
 * `host:port` entry only that port, so a listed host never opens its other ports (a Redis, an admin
 * endpoint on the same machine). Over https; plain http only for loopback hosts. Checked when the
 * batch is enqueued and again before each send.
 */
export function callbackUrlProblem(url: string, allowedHosts: readonly string[]): string | undefined {
  if (url.length > CALLBACK_URL_MAX_LENGTH)
    return `is ${url.length} characters long; at most ${CALLBACK_URL_MAX_LENGTH} are allowed`;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'is not a valid URL';
  }
  if (u.username || u.password) return 'must not contain credentials';
  const defaultPort = DEFAULT_PORTS[u.protocol];
  if (defaultPort === undefined) return 'must use https (http only for loopback hosts)';
  const host = u.hostname.toLowerCase().replace(/^\[|\]$/g, '');
  const port = u.port === '' ? defaultPort : Number(u.port);
  const entries = allowedHosts.map(parseAllowedHost).filter((e) => e?.host === host);
  if (entries.length === 0) return `host "${host}" is not in CALLBACK_ALLOWED_HOSTS`;
  if (!entries.some((e) => (e?.port ?? defaultPort) === port)) {
    return `port ${port} of host "${host}" is not in CALLBACK_ALLOWED_HOSTS (a bare host allows only port ${defaultPort} for ${u.protocol.slice(0, -1)}; list other ports as host:port)`;
  }
  if (u.protocol === 'https:') return undefined;
  const loopback = host === 'localhost' || host === '::1' || /^127\./.test(host);
  if (loopback) return undefined;
  return 'must use https (http only for loopback hosts)';
}

export function isCallbackAllowed(url: string, allowedHosts: readonly string[]): boolean {
  return callbackUrlProblem(url, allowedHosts) === undefined;
}
