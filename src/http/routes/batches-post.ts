import { formatUsdc } from '../../domain/money.ts';
import { enqueueValidated, type EnqueueOutcome } from '../../ingest/enqueue-batch.ts';
import { bufferSource } from '../../ingest/csv-source.ts';
import { readJsonBatch } from '../../ingest/json-source.ts';
import { screenOf } from '../../ops/screening-watch.ts';
import { validateCsv, validateJson, type ValidatedInput } from '../../ingest/validate-input.ts';
import { actorOf, type RoutePlugin } from '../route-deps.ts';
import { batchesPostSchema } from '../schemas/route-schemas.ts';
import { verifySignature } from '../auth.ts';
import { HttpError, unauthorized } from '../http-errors.ts';
import { parseJsonBody } from '../json-body.ts';
import { scanJsonBody } from '../json-scan.ts';
import { acknowledged } from '../../store/replica-acks.ts';

const CSV_TYPES = ['text/csv', 'application/csv'];
const JSON_TYPE = 'application/json';

const flag = (v: unknown): boolean => v === 'true' || v === '1' || v === '';

/**
 * `POST /v1/batches` (docs/operating.md "CSV format", docs/http-api.md): a CSV (`text/csv`) or a JSON document, validated by the
 * same code as `usdc-batch enqueue`. Query options: `skip_invalid`, `allow_duplicates`, and for CSV
 * `batch_id`. The body is taken raw (this plugin's own parsers), because the HMAC signature covers
 * the exact bytes sent.
 */
export const batchesPostRoute: RoutePlugin = async (app, { deps }) => {
  // Content-type parsers are scoped to this plugin: other routes keep Fastify's JSON parser.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser([...CSV_TYPES, JSON_TYPE], { parseAs: 'buffer' }, (_request, body, done) => {
    done(null, body);
  });

  app.post('/v1/batches', { schema: batchesPostSchema }, async (request, reply) => {
    const now = deps.now ?? Date.now;
    const raw = request.body;
    if (!Buffer.isBuffer(raw)) {
      throw new HttpError(415, 'USDC_HTTP_UNSUPPORTED_MEDIA_TYPE', 'send text/csv or application/json');
    }
    const secret = deps.config.hookHmacSecret;
    if (secret) {
      const header = request.headers['x-signature'];
      const check = verifySignature(
        typeof header === 'string' ? header : undefined,
        // request.url is the target as the client sent it (not re-encoded): what v2 signs.
        { method: request.method, target: request.url, body: raw },
        secret,
        now(),
      );
      if (!check.ok) throw unauthorized(check.reason);
    }

    const query = request.query as Record<string, unknown>;
    const type = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
    const limits = {
      maxTransferUsdc: deps.config.maxTransferUsdc,
      screen: deps.screening ? screenOf(deps.screening) : undefined,
      allowDuplicates: flag(query['allow_duplicates']),
    };
    let input: ValidatedInput;
    let batchId = typeof query['batch_id'] === 'string' ? query['batch_id'] : undefined;
    let callbackUrl: string | undefined;
    if (type === JSON_TYPE) {
      const text = raw.toString('utf8').replace(/^\uFEFF/, '');
      // A hostile shape is refused in one pass that lets other requests in, before anything is built.
      await scanJsonBody(text);
      const doc = parseJsonBody(text);
      const batch = readJsonBatch(doc);
      if (!batch) {
        throw new HttpError(
          400,
          'USDC_HTTP_BAD_DOCUMENT',
          'the body must be an object with a "transfers" array',
        );
      }
      batchId = batch.batchId ?? batchId;
      callbackUrl = batch.callbackUrl;
      input = await validateJson(batch, limits);
    } else {
      input = await validateCsv(bufferSource(raw), limits);
    }

    const outcome = await acknowledged(deps.acks, () =>
      enqueueValidated(
        { redis: deps.redis, prefix: deps.config.queuePrefix, jobs: deps.producer, config: deps.config, now },
        input,
        {
          source: 'http',
          actor: actorOf(request),
          batchId,
          skipInvalid: flag(query['skip_invalid']),
          allowDuplicates: limits.allowDuplicates,
          callbackUrl,
        },
      ),
    );
    if (outcome.status === 'rejected') {
      throw new HttpError(
        422,
        'USDC_INGEST_REJECTED',
        rejectionMessage(outcome),
        outcome.errors,
        outcome.errorCount,
      );
    }
    return reply.status(202).send({
      batch_id: outcome.batchId,
      created: outcome.created,
      held: outcome.held,
      accepted: outcome.accepted,
      rejected: outcome.rejected,
      duplicates: outcome.duplicates,
      errors: outcome.errors,
      error_count: outcome.errorCount,
      totals: { amount: formatUsdc(outcome.totalAmount) },
    });
  });
};

function rejectionMessage(o: EnqueueOutcome): string {
  const n = o.errorCount;
  const listed = n > o.errors.length ? ` (the first ${o.errors.length} are listed)` : '';
  return `the input was rejected: ${n} problem${n === 1 ? '' : 's'}${listed}; nothing was enqueued`;
}
