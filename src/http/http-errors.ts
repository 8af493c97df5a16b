import { STATUS_CODES } from 'node:http';
import { UsdcBatchError } from '../domain/errors.ts';
import type { IngestIssue } from '../ingest/ingest-issue.ts';

/** An error with an HTTP status and a namespaced code (Fastify's habit), answered as JSON. */
export class HttpError extends UsdcBatchError {
  override name = 'HttpError';
  readonly statusCode: number;
  readonly errors: readonly IngestIssue[] | undefined;
  /** How many problems there were: `errors` lists the first of them only. */
  readonly errorCount: number | undefined;
  constructor(
    statusCode: number,
    code: string,
    message: string,
    errors?: readonly IngestIssue[],
    errorCount?: number,
  ) {
    super(code, message);
    this.statusCode = statusCode;
    this.errors = errors;
    this.errorCount = errors ? (errorCount ?? errors.length) : undefined;
  }
}

export const unauthorized = (message: string) => new HttpError(401, 'USDC_HTTP_UNAUTHORIZED', message);
export const forbidden = (message: string) => new HttpError(403, 'USDC_HTTP_FORBIDDEN', message);
export const notFound = (message: string) => new HttpError(404, 'USDC_HTTP_NOT_FOUND', message);
export const badQuery = (message: string) => new HttpError(400, 'USDC_HTTP_BAD_QUERY', message);

/** The body of every error answer: `{ statusCode, code, error, message, errors?, error_count? }`. */
export function errorDocument(
  status: number,
  code: string,
  message: string,
  errors?: unknown,
  errorCount?: number,
) {
  return {
    statusCode: status,
    code,
    error: STATUS_CODES[status] ?? 'Error',
    message,
    ...(errors ? { errors } : {}),
    ...(errors && errorCount !== undefined ? { error_count: errorCount } : {}),
  };
}
