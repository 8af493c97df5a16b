import { UsdcBatchError } from '../domain/errors.ts';
import { hideUrlSecrets } from '../domain/url-display.ts';
import type { FailureKind, Operation } from './types.ts';

const WHAT: Readonly<Record<FailureKind, string>> = {
  rejected: 'the service refused the request',
  rate_limited: 'the service is rate limiting us',
  unavailable: 'the service could not be reached or did not process the request',
  ambiguous: 'the service may have acted, but its answer was lost or unreadable',
};

export type ServiceErrorInit = {
  readonly kind: FailureKind;
  readonly operation: Operation;
  readonly httpStatus?: number | undefined;
  readonly serviceCode?: string | undefined;
  readonly serviceMessage?: string | undefined;
  readonly retryAfterMs?: number | undefined;
  /** A public fact about the failure (an error code, a timeout phase, a parse problem). */
  readonly reason?: string | undefined;
  readonly cause?: unknown;
};

/**
 * One failed call to the transfer service, already classified (see `classifyFailure`). It carries
 * the operation, HTTP status and the service's own code and message — never the API key, a
 * signature or a signed payload (the service's message is scrubbed of anything that looks like one).
 */
export class ServiceError extends UsdcBatchError {
  override name = 'ServiceError';
  readonly kind: FailureKind;
  readonly operation: Operation;
  readonly httpStatus: number | null;
  readonly serviceCode: string | null;
  readonly serviceMessage: string | null;
  readonly retryAfterMs: number | null;

  constructor(init: ServiceErrorInit) {
    const parts: string[] = [];
    if (init.httpStatus !== undefined) parts.push(`HTTP ${init.httpStatus}`);
    if (init.serviceCode !== undefined) parts.push(init.serviceCode);
    if (init.serviceMessage !== undefined) parts.push(init.serviceMessage);
    if (init.reason !== undefined) parts.push(init.reason);
    super(`USDC_SERVICE_${init.kind.toUpperCase()}`, `${init.operation}: ${WHAT[init.kind]}`, {
      ...(parts.length > 0 ? { details: parts.join(': ') } : {}),
      cause: init.cause,
      meta: { operation: init.operation, kind: init.kind, httpStatus: init.httpStatus ?? null },
    });
    this.kind = init.kind;
    this.operation = init.operation;
    this.httpStatus = init.httpStatus ?? null;
    this.serviceCode = init.serviceCode ?? null;
    this.serviceMessage = init.serviceMessage ?? null;
    this.retryAfterMs = init.retryAfterMs ?? null;
  }
}

export function isServiceError(err: unknown, kind?: FailureKind): err is ServiceError {
  return err instanceof ServiceError && (kind === undefined || err.kind === kind);
}

/**
 * Removes what must never reach a message or a log from text the service (or a socket error) gave
 * us: the given secrets, hex blobs the size of a signature or more, long base64 runs (signed
 * transactions), and every URL's path, query and user part (domain/url-display.ts). Also bounds the
 * length.
 */
export function scrub(text: string, secrets: readonly string[] = []): string {
  let out = hideUrlSecrets(text);
  for (const s of secrets) if (s.length > 0) out = out.split(s).join('[redacted]');
  out = out
    .replace(/(0x)?[0-9a-fA-F]{128,}/g, '[redacted]')
    .replace(/[A-Za-z0-9+/]{80,}={0,2}/g, '[redacted]')
    .replace(/\bsk_[A-Za-z0-9_-]+/g, '[redacted]');
  return out.length > 300 ? `${out.slice(0, 300)}…` : out;
}

/**
 * The service refused our key: 401 or 403, whatever the operation. Nothing else it answers says
 * that the key is wrong (a 4xx otherwise refuses the request, after the key was accepted).
 */
export function isKeyRefusal(err: unknown): err is ServiceError {
  return err instanceof ServiceError && (err.httpStatus === 401 || err.httpStatus === 403);
}

/**
 * A configuration error (exit 2): the service refuses `TRANSFER_API_KEY`. Found once — at the
 * worker's start, at a dry run's first refusal — instead of one failed row at a time.
 */
export class ApiKeyRefusedError extends UsdcBatchError {
  override name = 'ApiKeyRefusedError';
  constructor(refusal: ServiceError) {
    super(
      'USDC_CONFIG_TRANSFER_API_KEY',
      `TRANSFER_API_KEY: the transfer service refused it (HTTP ${refusal.httpStatus ?? '?'} on ${refusal.operation}); check the key for this TRANSFER_API_URL`,
      { cause: refusal },
    );
  }
}
