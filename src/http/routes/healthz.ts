import type { RoutePlugin } from '../route-deps.ts';
import { healthzSchema } from '../schemas/route-schemas.ts';

/** Liveness: the process answers. Readiness (Redis reachable) is `/readyz`'s job. */
export const healthzRoute: RoutePlugin = async (app) => {
  app.get('/healthz', { schema: healthzSchema }, async () => ({ status: 'ok' }));
};
