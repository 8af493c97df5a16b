import { createHash, timingSafeEqual } from 'node:crypto';
import type { Secret } from '../config/config.ts';
import {
  hasQuery,
  requestHmac,
  type SignatureScheme,
  type SignedRequest,
} from '../domain/request-signature.ts';

/**
 * Compares a presented credential with the configured one in constant time. Both sides are hashed
 * first, so neither the content nor the length of the secret leaks through timing.
 */
export function secretMatches(presented: string, secret: Secret): boolean {
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(secret.reveal()).digest();
  return timingSafeEqual(a, b);
}

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? '');
  return m?.[1];
}

/** The password of an `Authorization: Basic base64(user:password)` header (any user), or undefined. */
export function basicPassword(header: string | undefined): string | undefined {
  const m = /^Basic[ \t]+([A-Za-z0-9+/=]+)[ \t]*$/i.exec(header ?? '');
  if (!m?.[1]) return undefined;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon === -1 ? undefined : decoded.slice(colon + 1);
}

/** How far a signature's time may be from ours, either way (docs/http-api.md: 5 minutes). */
export const SIGNATURE_TOLERANCE_S = 5 * 60;

export type SignatureCheck = { ok: true } | { ok: false; reason: string };

/**
 * Checks `X-Signature` over a request (docs/http-api.md). Two schemes, each an HMAC-SHA256 in hex:
 * - `v1=` of `t.body`: covers the body only, so it is valid only on a request without a query
 *   string (a query such as `batch_id` or `allow_duplicates` shapes the batch: a v1 request
 *   replayed with another query would make another batch of the same rows);
 * - `v2=` of `t.METHOD.PATH?QUERY.body`, the path and query exactly as sent: valid on any request.
 * Several values of a scheme are accepted (one may be signed with a secret being rotated out).
 */
export function verifySignature(
  header: string | undefined,
  request: SignedRequest,
  secret: Secret,
  nowMs: number,
): SignatureCheck {
  if (!header) return { ok: false, reason: 'X-Signature is missing' };
  const parsed = parseSignatureHeader(header);
  if (parsed.t === undefined || (parsed.v1.length === 0 && parsed.v2.length === 0)) {
    return { ok: false, reason: 'X-Signature is malformed (t=<unix s>,v1=<hex> or t=<unix s>,v2=<hex>)' };
  }
  const { t } = parsed;
  if (Math.abs(nowMs / 1000 - t) > SIGNATURE_TOLERANCE_S) {
    return { ok: false, reason: 'X-Signature is outside the 5-minute window' };
  }
  const withQuery = hasQuery(request);
  if (withQuery && parsed.v2.length === 0) {
    return {
      ok: false,
      reason:
        'this request has a query string, which v1 does not cover: sign it with v2= (HMAC of "t.METHOD.PATH?QUERY.body")',
    };
  }
  const matches = (scheme: SignatureScheme) => {
    const expected = requestHmac(secret.reveal(), t, scheme, request);
    return (hex: string) => timingSafeEqual(Buffer.from(hex, 'hex'), expected);
  };
  const match = parsed.v2.some(matches('v2')) || (!withQuery && parsed.v1.some(matches('v1')));
  return match ? { ok: true } : { ok: false, reason: 'X-Signature does not match the request' };
}

/** `t=<unix s>,v1=<hex>,v2=<hex>,…` → its parts; malformed parts are ignored. */
function parseSignatureHeader(header: string): { t: number | undefined; v1: string[]; v2: string[] } {
  let t: number | undefined;
  const v1: string[] = [];
  const v2: string[] = [];
  for (const part of header.split(',')) {
    const [k, v] = part.trim().split('=', 2);
    if (v === undefined) continue;
    if (k === 't' && /^[0-9]{1,12}$/.test(v)) t = Number(v);
    else if ((k === 'v1' || k === 'v2') && /^[0-9a-fA-F]{64}$/.test(v)) {
      (k === 'v1' ? v1 : v2).push(v.toLowerCase());
    }
  }
  return { t, v1, v2 };
}
