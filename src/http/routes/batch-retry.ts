import { retryBatch } from '../../ops/retry-batch.ts';
import { acknowledged } from '../../store/replica-acks.ts';
import { actorOf, type RoutePlugin } from '../route-deps.ts';
import { batchIdParam } from '../params.ts';
import { ignoreBody } from './ignore-body.ts';
import { batchRetrySchema } from '../schemas/route-schemas.ts';

/**
 * `POST /v1/batches/:id/retry` (role operator): re-queues the batch's `failed` transfers only. The
 * batch is re-opened (`complete: false`) before the answer; a held batch's transfers wait for approval,
 * and the re-queued rows pass the same holds as new ones.
 */
export const batchRetryRoute: RoutePlugin = async (app, { deps }) => {
  ignoreBody(app);
  app.post('/v1/batches/:id/retry', { schema: batchRetrySchema }, async (request) => {
    const id = batchIdParam(request);
    const { requeued } = await acknowledged(deps.acks, () =>
      retryBatch(
        {
          redis: deps.redis,
          prefix: deps.config.queuePrefix,
          jobs: deps.producer,
          actor: actorOf(request),
          auditLogFile: deps.config.auditLogFile,
          config: deps.config,
          ...(deps.now ? { now: deps.now } : {}),
        },
        id,
      ),
    );
    return { batch_id: id, requeued };
  });
};
