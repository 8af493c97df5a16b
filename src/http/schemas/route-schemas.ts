import type { FastifySchema } from 'fastify';
import { TRANSFER_ROADS } from '../../domain/roads.ts';
import { TRANSFER_STATES } from '../../domain/transfer.ts';
import { AUDIT_ACTIONS } from '../../store/audit.ts';
import { batchIdParams, errorAnswers, isoTime, jsonAnswer, nullable, usdc } from './common.ts';

/*
 * Each route's request and answers, for GET /openapi.json (see common.ts: they describe; the
 * handlers check and shape). Tags group them the way docs/http-api.md does.
 */

/** An answer object with these fields (all present), open to more. */
const answer = (properties: Record<string, object>) =>
  ({ type: 'object', required: Object.keys(properties), properties, additionalProperties: true }) as const;
const str = { type: 'string' } as const;
const int = { type: 'integer' } as const;
const bool = { type: 'boolean' } as const;

const ok = (description: string) => ({ type: 'object', description, additionalProperties: true }) as const;
const text = (type: string, description: string) => ({
  description,
  content: { [type]: { schema: { type: 'string' } } },
});
const html = (description: string) => text('text/html', description);

const transferInput = {
  type: 'object',
  required: ['from', 'to', 'amount', 'recipient'],
  properties: {
    id: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$' },
    from: { type: 'string' },
    to: { type: 'string' },
    amount: { type: 'string', description: 'USDC as a plain decimal' },
    recipient: { type: 'string' },
    memo: { type: 'string', maxLength: 140 },
  },
} as const;

export const healthzSchema: FastifySchema = {
  tags: ['health'],
  operationId: 'getHealthz',
  summary: 'Liveness (no credentials)',
  response: { 200: jsonAnswer('the process answers', ok('{ status: "ok" }')) },
};

export const readyzSchema: FastifySchema = {
  tags: ['health'],
  operationId: 'getReadyz',
  summary: 'Readiness: Redis answers',
  response: { 200: jsonAnswer('ready', ok('{ status: "ready", redis: "ok" }')), ...errorAnswers(401, 503) },
};

export const batchesPostSchema: FastifySchema = {
  tags: ['batches'],
  operationId: 'createBatch',
  summary: 'Enqueue a batch (CSV or JSON)',
  description:
    'The same validation as `usdc-batch enqueue`. With HOOK_HMAC_SECRET, `X-Signature: t=…,v1=…` (no query string) or `t=…,v2=…` is required.',
  querystring: {
    type: 'object',
    properties: {
      batch_id: { type: 'string', description: 'CSV only (JSON carries its own)' },
      via: {
        type: 'string',
        enum: [...TRANSFER_ROADS],
        description: 'CSV only (JSON carries its own): the road of the batch; default TRANSFER_VIA',
      },
      skip_invalid: { type: 'string', enum: ['true', '1', ''] },
      allow_duplicates: { type: 'string', enum: ['true', '1', ''] },
    },
  },
  headers: {
    type: 'object',
    properties: {
      'x-signature': { type: 'string', description: 't=<unix s>,v1=<hex> or t=<unix s>,v2=<hex>' },
    },
  },
  body: {
    content: {
      'text/csv': {
        schema: { type: 'string', description: 'RFC 4180 CSV: id,from,to,amount,recipient,memo' },
      },
      'application/json': {
        schema: {
          type: 'object',
          required: ['transfers'],
          properties: {
            batch_id: { type: 'string' },
            via: {
              type: 'string',
              enum: [...TRANSFER_ROADS],
              description: 'the road every transfer takes (docs/cctp.md); default TRANSFER_VIA',
            },
            transfers: { type: 'array', items: transferInput },
            expect: {
              type: 'object',
              properties: { rows: { type: 'integer' }, total: { type: 'string' } },
            },
            callback_url: { type: 'string', format: 'uri' },
          },
        },
      },
    },
  },
  response: {
    202: jsonAnswer('accepted (or already enqueued with the same rows: created false)', {
      type: 'object',
      required: ['batch_id', 'accepted', 'rejected'],
      properties: {
        batch_id: { type: 'string' },
        via: { type: 'string', enum: [...TRANSFER_ROADS] },
        created: { type: 'boolean' },
        held: { type: 'boolean' },
        accepted: { type: 'integer' },
        rejected: { type: 'integer' },
        duplicates: { type: 'integer' },
        errors: { type: 'array', items: { $ref: 'IngestIssue#' } },
        error_count: { type: 'integer' },
        totals: { type: 'object', properties: { amount: usdc }, additionalProperties: true },
      },
      additionalProperties: true,
    }),
    ...errorAnswers(400, 401, 409, 413, 415, 422),
  },
};

export const batchesListSchema: FastifySchema = {
  tags: ['batches'],
  operationId: 'listBatches',
  summary: 'Recent batches, newest first',
  querystring: {
    type: 'object',
    properties: { limit: { type: 'integer', minimum: 1, maximum: 1000, default: 50 } },
  },
  response: {
    200: jsonAnswer('the batches with their counts and totals', {
      type: 'object',
      required: ['batches'],
      properties: { batches: { type: 'array', items: { $ref: 'BatchSummary#' } } },
      additionalProperties: true,
    }),
    ...errorAnswers(400, 401),
  },
};

/** A page of one batch's rows: a state filter, a page size, and the cursor the previous page gave. */
function batchPageQuery(pageDefault: number, pageMax: number) {
  return {
    type: 'object',
    properties: {
      state: { type: 'string', enum: [...TRANSFER_STATES] },
      limit: { type: 'integer', minimum: 1, maximum: pageMax, default: pageDefault },
      cursor: { type: 'string', pattern: '^[0-9]{1,12}$', description: "the previous page's next_cursor" },
    },
  } as const;
}

export function batchStatusSchema(pageDefault: number, pageMax: number): FastifySchema {
  return {
    tags: ['batches'],
    operationId: 'getBatch',
    summary: 'The status document of one batch, paged',
    params: batchIdParams,
    querystring: batchPageQuery(pageDefault, pageMax),
    response: {
      200: jsonAnswer('counts and totals cover the whole batch; transfers are one page', {
        $ref: 'StatusDocument#',
      }),
      ...errorAnswers(400, 401, 404),
    },
  };
}

export const batchExportSchema = (format: 'csv' | 'json'): FastifySchema => ({
  tags: ['batches'],
  operationId: format === 'csv' ? 'exportBatchCsv' : 'exportBatchJson',
  summary: `One row per transfer (${format.toUpperCase()}), streamed`,
  params: batchIdParams,
  response: {
    200:
      format === 'csv'
        ? text('text/csv', 'a header, then one line per transfer')
        : jsonAnswer('one object per transfer', { type: 'array', items: { $ref: 'Transfer#' } }),
    ...errorAnswers(401, 404),
  },
});

export const batchRetrySchema: FastifySchema = {
  tags: ['operations'],
  operationId: 'retryBatch',
  summary: "Re-queue the batch's failed transfers only",
  params: batchIdParams,
  response: {
    200: jsonAnswer(
      're-queued; the batch is complete: false from now',
      answer({ batch_id: str, requeued: int }),
    ),
    ...errorAnswers(401, 404),
  },
};

export const batchCancelSchema: FastifySchema = {
  tags: ['operations'],
  operationId: 'cancelBatch',
  summary: "Cancel the batch's unsent transfers (or the ones named)",
  description:
    'Transfers still `queued` become `cancelled`, a final state that retry never re-queues; nothing in flight is cut off, and a held batch stays held. Without a body: every queued transfer of the batch.',
  params: batchIdParams,
  body: {
    content: {
      'application/json': {
        schema: {
          type: 'object',
          properties: {
            transfers: {
              type: 'array',
              minItems: 1,
              maxItems: 10_000,
              items: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$' },
            },
          },
          additionalProperties: false,
        },
      },
    },
  },
  response: {
    200: jsonAnswer(
      'cancelled (a named transfer that is not queued any more is listed in not_cancelled, with its state)',
      answer({
        batch_id: str,
        cancelled: int,
        not_cancelled: {
          type: 'array',
          items: answer({ id: str, state: { type: 'string', enum: [...TRANSFER_STATES] } }),
        },
      }),
    ),
    ...errorAnswers(400, 401, 404),
  },
};

export const batchApproveSchema: FastifySchema = {
  tags: ['operations'],
  operationId: 'approveBatch',
  summary: 'Approve a batch held for approval (four eyes)',
  description:
    "Approves the rows whose approval_digest (GET /v1/batches/{id}) is `digest`, as the credential's name; the APPROVALS_REQUIRED-th distinct approver releases the batch. Never the batch's submitter (403 `four_eyes`); a digest that is not the batch's now (a row cancelled or re-queued since) is 409 with the current `approval_digest`, and approvals of an earlier digest no longer count.",
  params: batchIdParams,
  body: {
    content: {
      'application/json': {
        schema: {
          type: 'object',
          required: ['digest'],
          properties: { digest: { type: 'string', pattern: '^[0-9a-fA-F]{64}$' } },
        },
      },
    },
  },
  response: {
    200: jsonAnswer(
      'approved (released when it was the last approval needed; already: true when it was not held)',
      answer({
        batch_id: str,
        released: int,
        already: bool,
        held: bool,
        approvals: int,
        approvals_required: int,
        approval_digest: nullable(str),
      }),
    ),
    ...errorAnswers(401, 404, 409),
  },
};

export const auditSchema: FastifySchema = {
  tags: ['operations'],
  operationId: 'listAudit',
  summary: 'Operator actions, newest first',
  querystring: {
    type: 'object',
    properties: {
      batch: { type: 'string', description: "one batch's actions" },
      limit: { type: 'integer', minimum: 1, maximum: 10000, default: 200 },
    },
  },
  response: {
    200: jsonAnswer('who, when, what', {
      type: 'object',
      required: ['entries'],
      properties: {
        entries: {
          type: 'array',
          items: {
            type: 'object',
            required: ['id', 'at', 'who', 'action', 'batch', 'detail'],
            properties: {
              id: { type: 'string' },
              at: isoTime,
              who: {
                type: 'string',
                description: "the HTTP credential's name, cli:<name> or schedule:<name>; never a token",
              },
              action: { type: 'string', enum: [...AUDIT_ACTIONS] },
              batch: nullable({ type: 'string' }),
              detail: { type: 'object', additionalProperties: true },
            },
            additionalProperties: true,
          },
        },
      },
      additionalProperties: true,
    }),
    ...errorAnswers(400, 401),
  },
};

const bookEntry = {
  type: 'object',
  required: ['address', 'family'],
  properties: {
    address: { type: 'string' },
    family: { type: 'string', enum: ['evm', 'solana'] },
    label: nullable({ type: 'string' }),
    added_by: { type: 'string' },
    added_at: { type: 'integer', description: 'unix ms' },
    via: { type: 'string' },
  },
  additionalProperties: true,
} as const;

export const recipientsListSchema: FastifySchema = {
  tags: ['recipients'],
  operationId: 'listRecipients',
  summary: 'The address book',
  response: {
    200: jsonAnswer('known recipients', {
      type: 'object',
      required: ['recipients'],
      properties: { recipients: { type: 'array', items: bookEntry } },
      additionalProperties: true,
    }),
    ...errorAnswers(401),
  },
};

export const recipientsPostSchema: FastifySchema = {
  tags: ['recipients'],
  operationId: 'addRecipients',
  summary: 'Add a recipient, or import a list all or none',
  body: {
    content: {
      'application/json': {
        schema: {
          type: 'object',
          properties: {
            address: { type: 'string' },
            label: { type: 'string' },
            recipients: {
              type: 'array',
              items: {
                type: 'object',
                required: ['address'],
                properties: { address: { type: 'string' }, label: { type: 'string' } },
              },
            },
          },
        },
      },
      'text/csv': { schema: { type: 'string', description: 'address,label' } },
    },
  },
  response: {
    200: jsonAnswer('already known, or the list imported ({ rows, added, updated })', ok('the change')),
    201: jsonAnswer('added', ok('{ address, family, added, was }')),
    ...errorAnswers(400, 401, 422),
  },
};

const removed = jsonAnswer(
  'removed',
  answer({ address: str, family: str, removed: bool, was_in_book: bool }),
);

export const recipientDeleteSchema: FastifySchema = {
  tags: ['recipients'],
  operationId: 'removeRecipient',
  summary: 'Remove a recipient: every later payment to it is held',
  params: { type: 'object', required: ['address'], properties: { address: { type: 'string' } } },
  response: { 200: removed, ...errorAnswers(400, 401) },
};

export const recipientsDeleteSchema: FastifySchema = {
  tags: ['recipients'],
  operationId: 'removeRecipientByQuery',
  summary: 'Remove a recipient named by ?address= or { address }',
  querystring: { type: 'object', properties: { address: { type: 'string' } } },
  response: { 200: removed, ...errorAnswers(400, 401) },
};

export const metricsSchema: FastifySchema = {
  tags: ['health'],
  operationId: 'getMetrics',
  summary: 'Prometheus metrics',
  response: { 200: text('text/plain', 'Prometheus text format'), ...errorAnswers(401, 503) },
};

export const openapiSchema: FastifySchema = {
  tags: ['health'],
  operationId: 'getOpenApi',
  summary: 'This document (OpenAPI 3.1)',
  response: { 200: jsonAnswer('the API described', ok('OpenAPI 3.1 document')), ...errorAnswers(401) },
};

export const uiListSchema: FastifySchema = {
  tags: ['pages'],
  operationId: 'uiListBatches',
  summary: 'Recent batches, for people',
  response: { 200: html('the batches page'), 401: html('log in: any user name, a token as the password') },
};

export const uiBatchSchema = (pageDefault: number, pageMax: number): FastifySchema => ({
  tags: ['pages'],
  operationId: 'uiGetBatch',
  summary: 'One batch and a page of its rows, for people',
  params: batchIdParams,
  querystring: batchPageQuery(pageDefault, pageMax),
  response: { 200: html('the batch page'), 400: html('a bad filter or cursor'), 404: html('no such batch') },
});

export const uiAuditSchema: FastifySchema = {
  tags: ['pages'],
  operationId: 'uiBatchAudit',
  summary: 'The audit entries of one batch, for people',
  params: batchIdParams,
  response: { 200: html('the audit page'), 404: html('no such batch') },
};

export const uiExportSchema: FastifySchema = {
  tags: ['pages'],
  operationId: 'uiExportBatchCsv',
  summary: 'The batch export, for a browser logged in to the pages',
  params: batchIdParams,
  response: { 200: text('text/csv', 'the same CSV as /v1/batches/{id}/export.csv') },
};
