import type { FastifyReply, FastifyRequest } from 'fastify';
import { readAudit } from '../../store/audit.ts';
import type { Redis } from 'ioredis';
import { createBatchReader, type BatchReader } from '../../present/batch-status.ts';
import { pausedView } from '../../present/batch-summary.ts';
import { readPause } from '../../store/pause-flag.ts';
import { HttpError, notFound } from '../http-errors.ts';
import { batchIdParam, cursorParam, intParam, queryOf, stateParam } from '../params.ts';
import type { RoutePlugin } from '../route-deps.ts';
import { auditPage } from '../ui/audit-page.ts';
import { batchPage } from '../ui/batch-page.ts';
import { batchesPage } from '../ui/batches-page.ts';
import { errorPage } from '../ui/error-page.ts';
import type { Html } from '../ui/html.ts';
import { UI_HEADERS } from '../ui/page-shell.ts';
import { sendBatchExport } from './batch-export.ts';
import { uiAuditSchema, uiBatchSchema, uiExportSchema, uiListSchema } from '../schemas/route-schemas.ts';

/** Batches on `/ui`. */
export const UI_BATCHES = 100;
/** Rows per page of `/ui/batches/:id` when `?limit=` is not given, and the most a page may show. */
export const UI_PAGE_DEFAULT = 100;
export const UI_PAGE_MAX = 1_000;
/** Audit entries on a batch's audit page. */
const UI_AUDIT_ENTRIES = 500;

/**
 * The batch pages for people (docs/http-api.md): `/ui` (recent batches) and `/ui/batches/:id` (one
 * batch and a page of its rows, `?state=`, `?cursor=`, `?limit=` as in `GET /v1/batches/:id`), with
 * the batch's export and audit entries beside it under `/ui/batches/:id/…` so that a browser logged
 * in once reaches them too. Server-rendered from the reader that builds the status document;
 * read-only (GET and HEAD only); for every credential that may read (route-table.ts), as a bearer
 * token or as the password of HTTP Basic login.
 */
export const uiRoute: RoutePlugin = async (app, { deps }) => {
  const reader = createBatchReader({ redis: deps.redis, prefix: deps.config.queuePrefix });
  const read: PageReads = { reader, redis: deps.redis, prefix: deps.config.queuePrefix };

  app.get('/ui', { schema: uiListSchema }, async (_request, reply) => {
    const [batches, pause] = await Promise.all([reader.list(UI_BATCHES), readPause(read.redis, read.prefix)]);
    return sendPage(reply, batchesPage(batches, UI_BATCHES, pausedView(pause)));
  });
  app.get(
    '/ui/batches/:id',
    { schema: uiBatchSchema(UI_PAGE_DEFAULT, UI_PAGE_MAX) },
    async (request, reply) => await pageOrError(reply, () => batchPageFor(read, request)),
  );
  app.get(
    '/ui/batches/:id/audit',
    { schema: uiAuditSchema },
    async (request, reply) => await pageOrError(reply, () => auditPageFor(read, request)),
  );
  app.get(
    '/ui/batches/:id/export.csv',
    { schema: uiExportSchema },
    async (request, reply) => await sendBatchExport(reply, reader, batchIdParam(request), 'csv'),
  );
};

type PageReads = { readonly reader: BatchReader; readonly redis: Redis; readonly prefix: string };

/** One batch and the page of its rows the query asks for (the status route's paging and filter). */
async function batchPageFor(read: PageReads, request: FastifyRequest): Promise<Html> {
  const id = batchIdParam(request);
  const query = queryOf(request);
  const state = stateParam(query);
  const cursor = cursorParam(query);
  const limit = intParam(query, 'limit', { fallback: UI_PAGE_DEFAULT, max: UI_PAGE_MAX });
  const doc = await read.reader.status(id, {
    limit,
    ...(state ? { state } : {}),
    ...(cursor ? { cursor } : {}),
  });
  if (!doc) throw notFound(`batch ${id} does not exist`);
  return batchPage(doc, { state, cursor, limit, defaultLimit: UI_PAGE_DEFAULT });
}

async function auditPageFor(read: PageReads, request: FastifyRequest): Promise<Html> {
  const id = batchIdParam(request);
  if (!(await read.reader.summary(id))) throw notFound(`batch ${id} does not exist`);
  const [entries, pause] = await Promise.all([
    readAudit(read.redis, read.prefix, { batch: id, limit: UI_AUDIT_ENTRIES }),
    readPause(read.redis, read.prefix),
  ]);
  return auditPage(id, entries, pausedView(pause));
}

function sendPage(reply: FastifyReply, page: Html, status = 200): FastifyReply {
  return reply.status(status).headers(UI_HEADERS).send(page.toString());
}

/** The page `render` makes, or the page of the API error it threw (a bad query, an unknown batch). */
async function pageOrError(reply: FastifyReply, render: () => Promise<Html>): Promise<FastifyReply> {
  try {
    return sendPage(reply, await render());
  } catch (err) {
    if (!(err instanceof HttpError)) throw err;
    return sendPage(reply, errorPage(err.statusCode, err.shortMessage), err.statusCode);
  }
}
