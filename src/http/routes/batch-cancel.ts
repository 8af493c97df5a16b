import { ID_PATTERN } from '../../domain/ids.ts';
import { cancelBatch, cancelTransfers } from '../../ops/cancel.ts';
import { acknowledged } from '../../store/replica-acks.ts';
import { HttpError } from '../http-errors.ts';
import { batchIdParam } from '../params.ts';
import { actorOf, type RoutePlugin } from '../route-deps.ts';
import { batchCancelSchema } from '../schemas/route-schemas.ts';

/** The most transfer ids one cancel names. */
export const MAX_CANCEL_IDS = 10_000;

/**
 * `POST /v1/batches/:id/cancel` (role operator; as the CLI's `cancel`): cancels the batch's unsent (`queued`)
 * transfers, or, with `{ "transfers": [id…] }`, only those. They become `cancelled`, a final state
 * that `retry` never re-queues; nothing in flight is cut off, and a held batch stays held. Answered
 * once the replicas hold the change (docs/replicated-redis.md).
 */
export const batchCancelRoute: RoutePlugin = async (app, { deps }) => {
  app.post('/v1/batches/:id/cancel', { schema: batchCancelSchema }, async (request) => {
    const id = batchIdParam(request);
    const only = transfersOf(request.body);
    const ops = {
      redis: deps.redis,
      prefix: deps.config.queuePrefix,
      jobs: deps.producer,
      actor: actorOf(request),
      auditLogFile: deps.config.auditLogFile,
      ...(deps.now ? { now: deps.now } : {}),
    };
    if (only === undefined) {
      const { cancelled } = await acknowledged(deps.acks, () => cancelBatch(ops, id));
      return { batch_id: id, cancelled, not_cancelled: [] };
    }
    const res = await acknowledged(deps.acks, () => cancelTransfers(ops, id, only));
    return {
      batch_id: id,
      cancelled: res.cancelled.length,
      transfers: res.cancelled,
      not_cancelled: res.skipped,
    };
  });
};

/** The body's `transfers` (undefined: the whole batch), each a transfer id. */
function transfersOf(body: unknown): string[] | undefined {
  if (body === undefined || body === null || body === '') return undefined;
  const bad = () =>
    new HttpError(
      400,
      'USDC_HTTP_BAD_BODY',
      `send no body (the whole batch) or { "transfers": [id, …] } (1 to ${MAX_CANCEL_IDS} transfer ids)`,
    );
  if (typeof body !== 'object' || Array.isArray(body)) throw bad();
  const extra = Object.keys(body).filter((k) => k !== 'transfers');
  if (extra.length > 0) throw bad();
  const list = (body as { transfers?: unknown }).transfers;
  if (list === undefined) return undefined;
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_CANCEL_IDS) throw bad();
  for (const t of list) if (typeof t !== 'string' || !ID_PATTERN.test(t)) throw bad();
  return list as string[];
}
