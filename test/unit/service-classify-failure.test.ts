import { describe, expect, it } from 'vitest';
import { classifyFailure, parseRetryAfter } from '../../src/service/classify-failure.ts';
import { ServiceError, scrub } from '../../src/service/service-error.ts';

const http = (status: number, retryAfter?: string) =>
  classifyFailure({ type: 'response', status, retryAfter, now: Date.parse('2025-01-01T00:00:00Z') });

describe('classifyFailure', () => {
  it('calls a 4xx other than 408, 409, 425 and 429 a refusal of this request', () => {
    for (const s of [400, 401, 403, 404, 405, 410, 413, 415, 422]) expect(http(s).kind).toBe('rejected');
  });

  it('calls 429 rate limited and reads Retry-After in seconds or as a date', () => {
    expect(http(429, '3')).toEqual({ kind: 'rate_limited', retryAfterMs: 3000 });
    expect(http(429, 'Wed, 01 Jan 2025 00:00:10 GMT')).toEqual({
      kind: 'rate_limited',
      retryAfterMs: 10_000,
    });
    expect(http(429)).toEqual({ kind: 'rate_limited', retryAfterMs: undefined });
    expect(http(429, 'soon').retryAfterMs).toBeUndefined();
  });

  it('calls 408, 425 and 503 unavailable: the service did not process the request', () => {
    for (const s of [408, 425, 503]) expect(http(s).kind).toBe('unavailable');
  });

  it('calls 409, 500, 502, 504, other 5xx and a 2xx with a broken body ambiguous', () => {
    for (const s of [409, 500, 502, 504, 501, 507, 200, 201, 302]) expect(http(s).kind).toBe('ambiguous');
  });

  it('calls a request that never connected unavailable', () => {
    for (const code of ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH'])
      expect(classifyFailure({ type: 'network', code, sent: 'unknown' }).kind).toBe('unavailable');
    expect(
      classifyFailure({ type: 'network', code: 'ETIMEDOUT', sent: 'not_connected', timeoutEvent: 'connect' })
        .kind,
    ).toBe('unavailable');
  });

  it('calls a reset before the request was written unavailable and after it was written ambiguous', () => {
    expect(classifyFailure({ type: 'network', code: 'ECONNRESET', sent: 'not_written' }).kind).toBe(
      'unavailable',
    );
    expect(classifyFailure({ type: 'network', code: 'ECONNRESET', sent: 'written' }).kind).toBe('ambiguous');
    expect(classifyFailure({ type: 'network', code: 'EPIPE', sent: 'written' }).kind).toBe('ambiguous');
  });

  it('calls a timeout after the request was sent ambiguous', () => {
    expect(
      classifyFailure({ type: 'network', code: 'ETIMEDOUT', sent: 'written', timeoutEvent: 'response' }).kind,
    ).toBe('ambiguous');
    expect(
      classifyFailure({ type: 'network', code: 'ETIMEDOUT', sent: 'written', timeoutEvent: 'socket' }).kind,
    ).toBe('ambiguous');
  });

  it('says ambiguous when it cannot tell whether the request was sent', () => {
    expect(classifyFailure({ type: 'network', code: 'ECONNRESET', sent: 'unknown' }).kind).toBe('ambiguous');
    expect(classifyFailure({ type: 'network', code: undefined, sent: 'unknown' }).kind).toBe('ambiguous');
    expect(classifyFailure({ type: 'network', code: 'EWHATEVER', sent: 'written' }).kind).toBe('ambiguous');
  });
});

describe('parseRetryAfter', () => {
  it('refuses nonsense and never goes negative', () => {
    expect(parseRetryAfter(undefined)).toBeUndefined();
    expect(parseRetryAfter('-1')).toBeUndefined();
    expect(parseRetryAfter('Wed, 01 Jan 2020 00:00:00 GMT', Date.parse('2025-01-01T00:00:00Z'))).toBe(0);
  });
});

describe('ServiceError', () => {
  it('carries the operation, status, service code and message with a stable code', () => {
    const e = new ServiceError({
      kind: 'rejected',
      operation: 'transfer',
      httpStatus: 400,
      serviceCode: 'permit_nonce_used',
      serviceMessage: 'permit.nonce was already used',
    });
    expect(e.code).toBe('USDC_SERVICE_REJECTED');
    expect(e.message).toContain('transfer');
    expect(e.message).toContain('HTTP 400');
    expect(e.message).toContain('permit_nonce_used');
    expect([e.httpStatus, e.serviceCode, e.retryAfterMs]).toEqual([400, 'permit_nonce_used', null]);
  });
});

describe('scrub', () => {
  it('removes the API key, signatures, signed transactions and sk_ keys from service text', () => {
    const sig = `0x${'ab'.repeat(65)}`;
    const tx = 'A'.repeat(120);
    const out = scrub(`key sk_live_abcdef123 bad sig ${sig} tx ${tx} and my-secret-key`, ['my-secret-key']);
    expect(out).not.toContain('sk_live_abcdef123');
    expect(out).not.toContain(sig);
    expect(out).not.toContain(tx);
    expect(out).not.toContain('my-secret-key');
    expect(out).toContain('bad sig');
  });
});
