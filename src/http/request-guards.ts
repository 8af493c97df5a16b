import type { IncomingMessage } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { escapeJsonControls } from '../domain/text.ts';

/*
 * Guards every answer of the HTTP API shares, whatever its route: headers that keep browsers and
 * caches from misreading or keeping an answer, one value per query parameter, a request log that
 * never holds a secret sent in a query string, and a 413 the client can read.
 */

/**
 * The Content-Security-Policy of an answer whose route sets none (JSON, CSV, text): it loads
 * nothing, runs nothing and is shown in no frame. The batch pages (ui/page-shell.ts) and bull-board's
 * pages (routes/dashboard.ts) set their own, each with `frame-ancestors 'none'`.
 */
export const API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/**
 * The headers every answer carries (docs/production.md "Security"): it says what it is (`nosniff`: a browser
 * never guesses a type from the body), is never stored by a browser or a proxy (`no-store`: status
 * documents, exports and the pages are money data), and is never framed (`X-Frame-Options` and the
 * CSP's `frame-ancestors`, against clickjacking). A CSP the route set is kept.
 */
export function setSecurityHeaders(reply: FastifyReply): void {
  reply.header('x-content-type-options', 'nosniff');
  reply.header('cache-control', 'no-store');
  reply.header('x-frame-options', 'DENY');
  if (!reply.hasHeader('content-security-policy')) reply.header('content-security-policy', API_CSP);
}

/** setSecurityHeaders as an `onSend` hook, for every route. */
export async function securityHeaders<T>(_request: unknown, reply: FastifyReply, payload: T): Promise<T> {
  setSecurityHeaders(reply);
  return payload;
}

/**
 * An `onSend` hook: a JSON answer carries DEL, C1, bidirectional and zero-width characters as
 * `\uXXXX` escapes (JSON.stringify leaves them raw): the same value for a JSON reader, but text
 * stored before such characters were refused (a recipient's label, a memo) cannot drive a terminal
 * or turn text around where the answer is printed.
 */
export async function escapeJsonAnswer<T>(_request: unknown, reply: FastifyReply, payload: T): Promise<T> {
  if (typeof payload !== 'string') return payload;
  const type = reply.getHeader('content-type');
  if (typeof type !== 'string' || !type.startsWith('application/json')) return payload;
  return escapeJsonControls(payload) as T;
}

/** The first query parameter given more than once (`?batch_id=x&batch_id=y`), or undefined. */
export function repeatedQueryParam(query: unknown): string | undefined {
  if (typeof query !== 'object' || query === null) return undefined;
  for (const [name, value] of Object.entries(query)) if (Array.isArray(value)) return name;
  return undefined;
}

// The query parameters of the API: their values are logged. Any other parameter's value is not —
// a token or key put in a query string by mistake (it is refused) must not land in the log.
const LOGGED_PARAMS = new Set([
  'batch_id',
  'skip_invalid',
  'allow_duplicates',
  'state',
  'limit',
  'cursor',
  'address',
]);
const MAX_LOGGED_URL = 2_048;

/**
 * The request target as the request log shows it: the path, and the query with the value of every
 * parameter the API does not define written `[redacted]`; cut to a bounded length.
 */
export function loggedUrl(url: string): string {
  const at = url.indexOf('?');
  const path = at === -1 ? url : url.slice(0, at);
  const shown =
    at === -1
      ? path
      : `${path}?${url
          .slice(at + 1)
          .split('&')
          .map((part) => {
            const eq = part.indexOf('=');
            if (eq === -1) return part;
            const name = part.slice(0, eq);
            return LOGGED_PARAMS.has(safeDecode(name)) ? part : `${name}=[redacted]`;
          })
          .join('&')}`;
  return shown.length > MAX_LOGGED_URL ? `${shown.slice(0, MAX_LOGGED_URL)}…` : shown;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

// A refused upload's rest is read and dropped up to this much, within the request deadline.
const MAX_DRAINED_BYTES = 128 * 1024 * 1024;

/**
 * After a 413 (body over the limit, refused before it was read): the rest of the body is read and
 * dropped, so the client, still sending, can read its answer and keep its connection (closing at
 * once resets a connection the client is writing to, and the answer is lost with it). Bounded: past
 * MAX_DRAINED_BYTES or `deadlineMs` the connection is closed anyway.
 */
export function drainRefusedBody(request: IncomingMessage, deadlineMs: number): void {
  if (request.readableEnded || request.destroyed) return;
  let seen = 0;
  const close = () => request.socket?.destroy();
  const timer = setTimeout(close, deadlineMs).unref();
  const done = () => clearTimeout(timer);
  request.on('data', (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > MAX_DRAINED_BYTES) {
      done();
      close();
    }
  });
  request.once('end', done);
  request.once('close', done);
  request.resume();
}

/** The client address a request's failures are counted against. */
export function clientOf(request: FastifyRequest): string {
  return request.ip || request.socket?.remoteAddress || 'unknown';
}
