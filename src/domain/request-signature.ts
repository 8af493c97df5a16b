import { createHmac } from 'node:crypto';

/*
 * The request signatures of docs/http-api.md, one definition for the hook that checks them and the
 * callbacks that send them. Each is a hex HMAC-SHA256 with the shared secret:
 * - `v1` of `t.body`: the body only, so valid only on a request without a query string;
 * - `v2` of `t.METHOD.PATH?QUERY.body`: the method and the request target exactly as sent, then the
 *   body. A query (`batch_id`, `allow_duplicates`) can change what a request does, so a request
 *   with one must be signed v2.
 */

export type SignatureScheme = 'v1' | 'v2';

/** What a signature covers: the method, the request target as sent (path and query), the body. */
export type SignedRequest = {
  readonly method: string;
  readonly target: string;
  readonly body: Buffer | string;
};

/** Whether the request has a query string (an empty one, `/path?`, included). */
export function hasQuery(request: Pick<SignedRequest, 'target'>): boolean {
  return request.target.includes('?');
}

/** The HMAC a scheme signs for the request at `t` (unix seconds). */
export function requestHmac(
  secret: string,
  t: number,
  scheme: SignatureScheme,
  request: SignedRequest,
): Buffer {
  const prefix = scheme === 'v1' ? `${t}.` : `${t}.${request.method}.${request.target}.`;
  return createHmac('sha256', secret).update(prefix).update(request.body).digest();
}

/** `X-Signature` for a request we send: `t=…,v1=…` without a query string, `t=…,v2=…` with one. */
export function signRequest(secret: string, request: SignedRequest, nowMs: number = Date.now()): string {
  const t = Math.floor(nowMs / 1000);
  const scheme: SignatureScheme = hasQuery(request) ? 'v2' : 'v1';
  return `t=${t},${scheme}=${requestHmac(secret, t, scheme, request).toString('hex')}`;
}
