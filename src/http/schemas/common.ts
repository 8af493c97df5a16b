import { BATCH_ID_PATTERN } from '../../domain/ids.ts';

/*
 * JSON Schema pieces the route schemas share. They describe the API for GET /openapi.json; they do
 * not check requests (the handlers do, answering in the API's own error format: see app.ts) and
 * do not shape answers (answers are serialized as the handlers built them).
 */

export const nullable = <T extends { type: string }>(schema: T) => ({
  ...schema,
  type: [schema.type, 'null'],
});

export const usdc = {
  type: 'string',
  pattern: '^-?[0-9]+\\.[0-9]{2,6}$',
  description: 'USDC as a decimal string (exact; at most 6 decimals)',
} as const;

export const isoTime = { type: 'string', format: 'date-time' } as const;

export const batchIdParams = {
  type: 'object',
  required: ['id'],
  properties: {
    id: {
      type: 'string',
      pattern: BATCH_ID_PATTERN.source,
      description: 'the batch id (an id no batch can have is answered 404)',
    },
  },
} as const;

/** `{ statusCode, code, error, message, errors?, error_count? }`: every error answer. */
export const errorDocument = {
  type: 'object',
  required: ['statusCode', 'code', 'error', 'message'],
  properties: {
    statusCode: { type: 'integer' },
    code: { type: 'string', description: 'namespaced and stable: USDC_HTTP_…, USDC_BATCH_…, USDC_INGEST_…' },
    error: { type: 'string' },
    message: { type: 'string' },
    errors: { type: 'array', items: { $ref: 'IngestIssue#' } },
    error_count: { type: 'integer', description: 'all problems; `errors` lists the first 1,000' },
  },
  additionalProperties: true,
} as const;

/** One problem of a rejected input, at its line and column. */
export const ingestIssue = {
  $id: 'IngestIssue',
  type: 'object',
  required: ['line', 'column', 'message'],
  properties: {
    line: { type: ['integer', 'null'] },
    column: { type: ['string', 'null'] },
    message: { type: 'string' },
  },
  additionalProperties: true,
} as const;

/** A JSON answer with its schema, for a route's `response`. */
export function jsonAnswer(description: string, schema: object) {
  return { description, content: { 'application/json': { schema } } };
}

/**
 * The error answers of a route, by status. A route that takes credentials (401) can also answer
 * 429 (an address that failed authentication too often, for a while) and 400 (a query parameter
 * given twice, a malformed URL, a JSON string over the size any field allows): the hook checks
 * those before the route's own code runs.
 */
export function errorAnswers(...statuses: number[]) {
  const all = statuses.includes(401) ? [...new Set([400, ...statuses, 429])].sort((a, b) => a - b) : statuses;
  return Object.fromEntries(
    all.map((s) => [s, jsonAnswer(ERROR_TEXT[s] ?? 'error', { $ref: 'ErrorDocument#' })]),
  );
}

const ERROR_TEXT: Readonly<Record<number, string>> = {
  400: 'malformed request (body, query or parameter; a query parameter given twice; a JSON string too long)',
  401: 'missing or wrong credentials',
  403: "the credential's roles do not cover this route (the answer's `roles` names those that do)",
  404: 'no such batch (or route)',
  409: "a conflict: a batch id reused with other rows, or an approval digest that is not the batch's now (`approval_digest` names the current one)",
  413: 'body too large',
  415: 'unsupported content type',
  422: 'the input was rejected: per-row errors, nothing enqueued',
  429: 'too many failed authentications from this address: try again after Retry-After seconds',
  503: 'Redis does not answer',
};
