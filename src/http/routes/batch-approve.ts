import { isDigest } from '../../domain/approval-digest.ts';
import { approveBatch } from '../../ops/approve-batch.ts';
import { requireBatch } from '../../ops/ops-deps.ts';
import { screenOf } from '../../ops/screening-watch.ts';
import { approvalDigestOf } from '../../store/approvals.ts';
import { acknowledged } from '../../store/replica-acks.ts';
import { errorDocument } from '../http-errors.ts';
import { actorOf, type RoutePlugin } from '../route-deps.ts';
import { batchIdParam } from '../params.ts';
import { batchApproveSchema } from '../schemas/route-schemas.ts';

/**
 * `POST /v1/batches/:id/approve` `{ "digest" }` (role approver; docs/access.md "Four eyes"): approves the
 * held batch's rows whose approval digest is `digest`, as the credential's name. The last approval
 * needed releases the batch. 403 `four_eyes` for its submitter, 409 with the current digest when
 * the rows changed since the digest was read, 400 (with the current digest) without one. Answered
 * once the replicas hold the approval (docs/replicated-redis.md).
 */
export const batchApproveRoute: RoutePlugin = async (app, { deps }) => {
  app.post('/v1/batches/:id/approve', { schema: batchApproveSchema }, async (request, reply) => {
    const id = batchIdParam(request);
    const prefix = deps.config.queuePrefix;
    const ops = {
      redis: deps.redis,
      prefix,
      jobs: deps.producer,
      actor: actorOf(request),
      auditLogFile: deps.config.auditLogFile,
      approvalsRequired: deps.config.approvalsRequired,
      screen: deps.screening ? screenOf(deps.screening) : undefined,
      ...(deps.now ? { now: deps.now } : {}),
    };
    const digest = (request.body as { digest?: unknown } | undefined)?.digest;
    if (!isDigest(digest)) {
      const batch = await requireBatch(ops, id);
      const current =
        batch.held && batch.enqueued ? await approvalDigestOf(deps.redis, prefix, id, batch) : null;
      return reply.status(400).send({
        ...errorDocument(
          400,
          'USDC_APPROVAL_DIGEST_REQUIRED',
          'send { "digest": "<the approval_digest of the rows you reviewed>" } (GET /v1/batches/:id shows it)',
        ),
        approval_digest: current,
      });
    }
    const res = await acknowledged(deps.acks, () => approveBatch(ops, id, digest));
    return {
      batch_id: id,
      released: res.released,
      already: res.already,
      held: res.held,
      approvals: res.approvals,
      approvals_required: res.required,
      approval_digest: res.digest,
    };
  });
};
