import { approveBatch } from '../../ops/approve-batch.ts';
import { acknowledged } from '../../store/replica-acks.ts';
import { actorOf, type RoutePlugin } from '../route-deps.ts';
import { batchIdParam } from '../params.ts';
import { ignoreBody } from './ignore-body.ts';
import { batchApproveSchema } from '../schemas/route-schemas.ts';

/**
 * `POST /v1/batches/:id/approve` (role approver): releases a batch
 * held for approval. Approving a batch that is not held changes nothing (`already: true`).
 */
export const batchApproveRoute: RoutePlugin = async (app, { deps }) => {
  ignoreBody(app);
  app.post('/v1/batches/:id/approve', { schema: batchApproveSchema }, async (request) => {
    const id = batchIdParam(request);
    const res = await acknowledged(deps.acks, () =>
      approveBatch(
        {
          redis: deps.redis,
          prefix: deps.config.queuePrefix,
          jobs: deps.producer,
          actor: actorOf(request),
          ...(deps.now ? { now: deps.now } : {}),
        },
        id,
      ),
    );
    return { batch_id: id, released: res.released, already: res.already };
  });
};
