import { screenOf } from '../../ops/screening-watch.ts';
import type { FastifyRequest } from 'fastify';
import { readRecipientCsv, type RecipientInput } from '../../ingest/recipient-file.ts';
import type { IngestIssue } from '../../ingest/ingest-issue.ts';
import { addRecipient, importRecipients, listRecipients, removeRecipient } from '../../ops/recipients.ts';
import { actorOf, type RoutePlugin } from '../route-deps.ts';
import { HttpError } from '../http-errors.ts';
import { queryOf } from '../params.ts';
import {
  recipientDeleteSchema,
  recipientsDeleteSchema,
  recipientsListSchema,
  recipientsPostSchema,
} from '../schemas/route-schemas.ts';
import { labelProblem, parseBookAddress, type BookAddress } from '../../domain/recipient-key.ts';
import { acknowledged } from '../../store/replica-acks.ts';
import { counted } from '../../domain/plural.ts';

const CSV_TYPES = ['text/csv', 'application/csv'];

/**
 * `GET /v1/recipients` (any reader): the address book. `POST /v1/recipients` adds `{ address,
 * label? }`, or `{ recipients: [{ address, label? }] }` or a CSV (`address,label`) all or none, and
 * `DELETE /v1/recipients/:address` (or `DELETE /v1/recipients` with `{ address }` or `?address=`)
 * removes one — both for the role approver only (route-table.ts): whoever submits batches must not
 * vouch for their recipients.
 */
export const recipientsRoute: RoutePlugin = async (app, { deps }) => {
  const prefix = deps.config.queuePrefix;
  const opsOf = (request: FastifyRequest) => ({
    redis: deps.redis,
    prefix,
    actor: actorOf(request),
    auditLogFile: deps.config.auditLogFile,
    screen: deps.screening ? screenOf(deps.screening) : undefined,
    ...(deps.now ? { now: deps.now } : {}),
  });
  app.addContentTypeParser(CSV_TYPES, { parseAs: 'string' }, (_request, body, done) => done(null, body));

  app.get('/v1/recipients', { schema: recipientsListSchema }, async () => ({
    recipients: await listRecipients({ redis: deps.redis, prefix }),
  }));

  app.post('/v1/recipients', { schema: recipientsPostSchema }, async (request, reply) => {
    const body = request.body;
    if (typeof body === 'string' || Array.isArray(recipientsOf(body))) {
      const input =
        typeof body === 'string'
          ? readRecipientCsv(body)
          : readRecipientList(recipientsOf(body) as unknown[]);
      const res = await acknowledged(deps.acks, () => importRecipients(opsOf(request), input, 'http'));
      if (res.status === 'rejected') {
        throw new HttpError(
          422,
          'USDC_RECIPIENTS_INVALID',
          `${counted(res.errors.length, 'problem')}; nothing was added`,
          res.errors,
        );
      }
      return { rows: res.rows, added: res.added, updated: res.updated };
    }
    const { address, label } = (body ?? {}) as { address?: unknown; label?: unknown };
    if (typeof address !== 'string' || (label !== undefined && label !== null && typeof label !== 'string')) {
      throw new HttpError(
        400,
        'USDC_HTTP_BAD_BODY',
        'send { "address": "…", "label"?: "…" }, { "recipients": […] } or text/csv',
      );
    }
    const res = await acknowledged(deps.acks, () =>
      addRecipient(opsOf(request), address, typeof label === 'string' ? label : undefined),
    );
    return reply.status(res.was === 'known' ? 200 : 201).send({
      address: res.address.address,
      family: res.address.family,
      added: res.was !== 'known',
      was: res.was,
    });
  });

  const remove = async (request: FastifyRequest, text: unknown) => {
    if (typeof text !== 'string' || text === '') {
      throw new HttpError(400, 'USDC_HTTP_BAD_BODY', 'name the address: DELETE /v1/recipients/<address>');
    }
    const res = await acknowledged(deps.acks, () => removeRecipient(opsOf(request), text));
    return {
      address: res.address.address,
      family: res.address.family,
      removed: true,
      was_in_book: res.existed,
    };
  };
  app.delete('/v1/recipients/:address', { schema: recipientDeleteSchema }, async (request) =>
    remove(request, (request.params as Record<string, unknown>)['address']),
  );
  app.delete('/v1/recipients', { schema: recipientsDeleteSchema }, async (request) =>
    remove(request, queryOf(request)['address'] ?? ((request.body ?? {}) as { address?: unknown }).address),
  );
};

function recipientsOf(body: unknown): unknown {
  return typeof body === 'object' && body !== null
    ? (body as { recipients?: unknown }).recipients
    : undefined;
}

/** A JSON list of `{ address, label? }`: `line` is the entry's 1-based position, as for batches. */
function readRecipientList(list: readonly unknown[]): RecipientInput {
  const rows: { line: number; address: BookAddress; label: string }[] = [];
  const issues: IngestIssue[] = [];
  list.forEach((item, i) => {
    const line = i + 1;
    const { address, label } = (typeof item === 'object' && item !== null ? item : {}) as Record<
      string,
      unknown
    >;
    const parsed = typeof address === 'string' ? parseBookAddress(address) : undefined;
    if (!parsed) issues.push({ line, column: 'address', message: 'address must be a string' });
    else if (!parsed.ok)
      issues.push({ line, column: 'address', message: `"${String(address).slice(0, 60)}" ${parsed.reason}` });
    const text = typeof label === 'string' ? label : '';
    const bad =
      label !== undefined && label !== null && typeof label !== 'string'
        ? 'label must be a string'
        : labelProblem(text);
    if (bad) issues.push({ line, column: 'label', message: bad });
    if (parsed?.ok && !bad) rows.push({ line, address: parsed.value, label: text });
  });
  if (list.length === 0) issues.push({ line: null, column: 'recipients', message: 'the list is empty' });
  return { rows, issues };
}
