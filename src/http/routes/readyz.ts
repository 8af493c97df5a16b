import type { RoutePlugin } from '../route-deps.ts';
import { readyzSchema } from '../schemas/route-schemas.ts';

/** How long a PING may take before the process is reported not ready. */
const PING_TIMEOUT_MS = 2_000;

/** `GET /readyz`: 200 while Redis answers PING, 503 otherwise (liveness is `/healthz`). */
export const readyzRoute: RoutePlugin = async (app, { deps }) => {
  app.get('/readyz', { schema: readyzSchema }, async (_request, reply) => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), PING_TIMEOUT_MS);
    });
    const answer = await Promise.race([deps.redis.ping().catch((err: Error) => err.message), timeout]);
    clearTimeout(timer);
    if (answer === 'PONG') return { status: 'ready', redis: 'ok' };
    return reply.status(503).send({
      statusCode: 503,
      code: 'USDC_HTTP_NOT_READY',
      error: 'Service Unavailable',
      message: 'Redis does not answer',
    });
  });
};
