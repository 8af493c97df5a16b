import type { FailureKind } from './types.ts';

/**
 * What was observed about one failed request, reduced to the facts the classification needs.
 * `sent` says how far the request got before the connection failed:
 * - `not_connected`: no connection was ever made (refused, DNS, connect timeout);
 * - `not_written`: connected, but the request was not completely written, so the service cannot
 *   have parsed it;
 * - `written`: the whole request left us (the service may have acted);
 * - `unknown`: we cannot tell, which counts as `written`.
 */
export type FailureFacts =
  | {
      readonly type: 'response';
      /** A 2xx here means its body could not be parsed or lacked a required field. */
      readonly status: number;
      /** The raw `Retry-After` header, when present. */
      readonly retryAfter?: string | undefined;
      /** Clock for an HTTP-date `Retry-After`; defaults to `Date.now()`. */
      readonly now?: number | undefined;
    }
  | {
      readonly type: 'network';
      /** The socket or got error code (`ECONNREFUSED`, `ECONNRESET`, `ETIMEDOUT`, ...). */
      readonly code: string | undefined;
      readonly sent: 'not_connected' | 'not_written' | 'written' | 'unknown';
      /** For a got timeout, the phase that timed out (`lookup`, `connect`, `send`, `response`, ...). */
      readonly timeoutEvent?: string | undefined;
    };

export type FailureClass = {
  readonly kind: FailureKind;
  /** For `rate_limited`: the service's Retry-After, in milliseconds, when it gave one. */
  readonly retryAfterMs: number | undefined;
};

// Errors that happen before any byte reaches the service: nothing can have been processed.
const NEVER_CONNECTED_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
  'EADDRNOTAVAIL',
]);
const PRE_SEND_TIMEOUTS = new Set(['lookup', 'connect', 'secureConnect']);

/** Parses `Retry-After` (delta seconds or an HTTP date) into milliseconds; undefined when absent or invalid. */
export function parseRetryAfter(value: string | undefined, now: number = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^[0-9]+$/.test(text)) return Number(text) * 1000;
  // An HTTP-date names its weekday and month; Date.parse alone would take "-1" as a year.
  const at = /^[A-Za-z]{3}, /.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/**
 * The one place that decides what a failed request means (issue 3):
 * - `rejected`: a 4xx other than 408, 409, 425, 429 — the service refused this request;
 * - `rate_limited`: 429, with its Retry-After;
 * - `unavailable`: the request did not reach the service or was not processed (refused, DNS,
 *   reset before the request was written, 408, 425, 503);
 * - `ambiguous`: the service may have acted (timeout or reset after sending, 409, 500, 502, 504,
 *   any other 5xx or unexpected status, a 2xx with a broken body).
 * When in doubt it answers `ambiguous`: calling a lost payment "unavailable" could pay it twice.
 */
export function classifyFailure(facts: FailureFacts): FailureClass {
  const of = (kind: FailureKind, retryAfterMs?: number): FailureClass => ({ kind, retryAfterMs });
  if (facts.type === 'network') {
    if (facts.sent === 'not_connected') return of('unavailable');
    if (facts.code !== undefined && NEVER_CONNECTED_CODES.has(facts.code)) return of('unavailable');
    if (facts.timeoutEvent !== undefined && PRE_SEND_TIMEOUTS.has(facts.timeoutEvent))
      return of('unavailable');
    if (facts.sent === 'not_written') return of('unavailable');
    return of('ambiguous');
  }
  const { status } = facts;
  // A 2xx only fails when its body is broken: the service acted, we cannot read what it did.
  if (status >= 200 && status < 300) return of('ambiguous');
  if (status === 429) return of('rate_limited', parseRetryAfter(facts.retryAfter, facts.now ?? Date.now()));
  if (status === 408 || status === 425 || status === 503) return of('unavailable');
  if (status === 409) return of('ambiguous');
  if (status >= 400 && status < 500) return of('rejected');
  // 500, 502, 504, any other 5xx, and statuses a JSON API should never send (1xx, 3xx).
  return of('ambiguous');
}
