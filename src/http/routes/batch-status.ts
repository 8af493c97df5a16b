import { createBatchReader } from '../../present/batch-status.ts';
import type { RoutePlugin } from '../route-deps.ts';
import { batchStatusSchema } from '../schemas/route-schemas.ts';
import { notFound } from '../http-errors.ts';
import { batchIdParam, cursorParam, intParam, queryOf, stateParam } from '../params.ts';

/** Transfers per page when `limit` is not given, and the most a page may hold. */
export const STATUS_PAGE_DEFAULT = 1_000;
export const STATUS_PAGE_MAX = 10_000;

/**
 * `GET /v1/batches/:id`: the status document of docs/http-api.md, its transfers in line order and
 * paged (`?limit=`, default 1 000, at most 10 000; `?cursor=` the previous page's `next_cursor`,
 * which is null on the last page), optionally only one `?state=`. Counts and totals always cover
 * the whole batch. Reads the batch's counters and sorted sets, never scans the transfers.
 */
export const batchStatusRoute: RoutePlugin = async (app, { deps }) => {
  const reader = createBatchReader({ redis: deps.redis, prefix: deps.config.queuePrefix });
  app.get(
    '/v1/batches/:id',
    { schema: batchStatusSchema(STATUS_PAGE_DEFAULT, STATUS_PAGE_MAX) },
    async (request) => {
      const id = batchIdParam(request);
      const query = queryOf(request);
      const state = stateParam(query);
      const cursor = cursorParam(query);
      const limit = intParam(query, 'limit', { fallback: STATUS_PAGE_DEFAULT, max: STATUS_PAGE_MAX });
      const doc = await reader.status(id, {
        limit,
        ...(state ? { state } : {}),
        ...(cursor ? { cursor } : {}),
      });
      if (!doc) throw notFound(`batch ${id} does not exist`);
      return doc;
    },
  );
};
