import { createBatchReader } from '../../present/batch-status.ts';
import type { RoutePlugin } from '../route-deps.ts';
import { batchesListSchema } from '../schemas/route-schemas.ts';
import { intParam, queryOf } from '../params.ts';

/** `GET /v1/batches`: recent batches, newest first, with their counts and totals (`?limit=`, default 50). */
export const batchesListRoute: RoutePlugin = async (app, { deps }) => {
  const reader = createBatchReader({ redis: deps.redis, prefix: deps.config.queuePrefix });
  app.get('/v1/batches', { schema: batchesListSchema }, async (request) => {
    const limit = intParam(queryOf(request), 'limit', { fallback: 50, max: 1_000 });
    return { batches: await reader.list(limit) };
  });
};
