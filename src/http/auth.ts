import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { Secret } from '../config/config.ts';

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

/** How far a signature's time may be from ours, either way (PRODUCT.md §6: 5 minutes). */
export const SIGNATURE_TOLERANCE_S = 5 * 60;

export type SignatureCheck = { ok: true } | { ok: false; reason: string };

/**
 * Checks `X-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">` over the raw body bytes.
 * Several `v1=` values are accepted (one may be signed with a secret being rotated out).
 */
export function verifySignature(
  header: string | undefined,
  rawBody: Buffer,
  secret: Secret,
  nowMs: number,
): SignatureCheck {
  if (!header) return { ok: false, reason: 'X-Signature is missing' };
  let t: number | undefined;
  const v1: string[] = [];
  for (const part of header.split(',')) {
    const [k, v] = part.trim().split('=', 2);
    if (k === 't' && v !== undefined && /^[0-9]{1,12}$/.test(v)) t = Number(v);
    else if (k === 'v1' && v !== undefined && /^[0-9a-fA-F]{64}$/.test(v)) v1.push(v.toLowerCase());
  }
  if (t === undefined || v1.length === 0)
    return { ok: false, reason: 'X-Signature is malformed (t=<unix s>,v1=<hex>)' };
  if (Math.abs(nowMs / 1000 - t) > SIGNATURE_TOLERANCE_S) {
    return { ok: false, reason: 'X-Signature is outside the 5-minute window' };
  }
  const expected = createHmac('sha256', secret.reveal()).update(`${t}.`).update(rawBody).digest();
  const match = v1.some((hex) => timingSafeEqual(Buffer.from(hex, 'hex'), expected));
  return match ? { ok: true } : { ok: false, reason: 'X-Signature does not match the body' };
}
