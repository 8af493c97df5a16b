import { createMetricsRegistry } from '../../metrics/metrics-registry.ts';
import type { RoutePlugin } from '../route-deps.ts';
import { metricsSchema } from '../schemas/route-schemas.ts';
import { HttpError } from '../http-errors.ts';

/** `GET /metrics`: Prometheus text, every value read from Redis at scrape time (metrics-registry.ts). */
export const metricsRoute: RoutePlugin = async (app, { deps }) => {
  const metrics = createMetricsRegistry({
    redis: deps.redis,
    prefix: deps.config.queuePrefix,
    queueCounts: () => deps.queues.counts(),
    dailyCap: deps.config.maxDailyUsdc,
  });
  app.get('/metrics', { schema: metricsSchema }, async (request, reply) => {
    let text: string;
    try {
      text = await metrics.render();
    } catch (err) {
      request.log.warn({ err: { message: (err as Error).message } }, 'metrics scrape failed');
      throw new HttpError(503, 'USDC_HTTP_METRICS_UNAVAILABLE', 'metrics cannot be read from Redis');
    }
    return reply.type(metrics.contentType).send(text);
  });
};
