import type { Redis } from 'ioredis';
import { parseReplication, slotReplication } from '../../store/primary-watch.ts';
import type { RoutePlugin } from '../route-deps.ts';
import { readyzSchema } from '../schemas/route-schemas.ts';

/** How long Redis may take to answer before the process is reported not ready. */
const PING_TIMEOUT_MS = 2_000;

/**
 * `GET /readyz`: 200 while a Redis primary answers, 503 otherwise (liveness is `/healthz`). A
 * replica answers but takes no writes: during a failover, until the endpoint (or the Sentinels)
 * lead to the new primary, the process is not ready (docs/replicated-redis.md). On a Redis Cluster,
 * the master owning the project's slot is asked: 503 while the slot has no master that answers.
 */
export const readyzRoute: RoutePlugin = async (app, { deps }) => {
  app.get('/readyz', { schema: readyzSchema }, async (_request, reply) => {
    const role = await primaryRole(deps.redis, deps.config.queuePrefix);
    if (role === 'master') return { status: 'ready', redis: 'ok' };
    return reply.status(503).send({
      statusCode: 503,
      code: 'USDC_HTTP_NOT_READY',
      error: 'Service Unavailable',
      message:
        role === undefined
          ? 'Redis does not answer'
          : `Redis answers as a ${role === 'slave' ? 'replica' : role}, not a primary`,
    });
  });
};

/**
 * The role Redis answers with (`master`, `slave`), or undefined when it does not answer in time.
 * Read from `INFO replication`, which the project's ACL user may run (docs/security.md), not `ROLE`.
 */
async function primaryRole(redis: Redis, prefix: string): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), PING_TIMEOUT_MS);
  });
  const answer = slotReplication(redis, prefix).then(
    (text) => parseReplication(text).role || undefined,
    () => undefined,
  );
  try {
    return await Promise.race([answer, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
