import { BATCH_ID_PATTERN, BATCH_ID_RULE } from '../../domain/ids.ts';
import { readAudit } from '../../store/audit.ts';
import type { RoutePlugin } from '../route-deps.ts';
import { auditSchema } from '../schemas/route-schemas.ts';
import { badQuery } from '../http-errors.ts';
import { intParam, queryOf } from '../params.ts';

/** `GET /v1/audit`: operator actions, newest first (`?batch=` one batch's, `?limit=` default 200). */
export const auditRoute: RoutePlugin = async (app, { deps }) => {
  app.get('/v1/audit', { schema: auditSchema }, async (request) => {
    const query = queryOf(request);
    const batch = query['batch'];
    if (batch !== undefined && (typeof batch !== 'string' || !BATCH_ID_PATTERN.test(batch))) {
      throw badQuery(`batch must be a batch id: ${BATCH_ID_RULE}`);
    }
    const limit = intParam(query, 'limit', { fallback: 200, max: 10_000 });
    const entries = await readAudit(deps.redis, deps.config.queuePrefix, {
      limit,
      ...(batch ? { batch } : {}),
    });
    return { entries };
  });
};
