import { Readable } from 'node:stream';
import { exportBatch } from '../../ops/export.ts';
import type { FastifyReply } from 'fastify';
import { createBatchReader, type BatchReader } from '../../present/batch-status.ts';
import type { RoutePlugin } from '../route-deps.ts';
import { batchExportSchema } from '../schemas/route-schemas.ts';
import { notFound } from '../http-errors.ts';
import { batchIdParam } from '../params.ts';

const TYPES = { csv: 'text/csv; charset=utf-8', json: 'application/json; charset=utf-8' } as const;

/**
 * `GET /v1/batches/:id/export.csv` (and `.json`): one row per transfer with intent ids and
 * outcomes, as `usdc-batch export` writes it, streamed page by page so a 100 000-row batch is never
 * held in memory whole.
 */
export const batchExportRoute: RoutePlugin = async (app, { deps }) => {
  const reader = createBatchReader({ redis: deps.redis, prefix: deps.config.queuePrefix });
  for (const format of ['csv', 'json'] as const) {
    app.get(
      `/v1/batches/:id/export.${format}`,
      { schema: batchExportSchema(format) },
      async (request, reply) => {
        return await sendBatchExport(reply, reader, batchIdParam(request), format);
      },
    );
  }
};

/** Streams the export of batch `id` as a download; 404 when there is no such batch. */
export async function sendBatchExport(
  reply: FastifyReply,
  reader: BatchReader,
  id: string,
  format: 'csv' | 'json',
): Promise<FastifyReply> {
  if (!(await reader.summary(id))) throw notFound(`batch ${id} does not exist`);
  return reply
    .type(TYPES[format])
    .header('content-disposition', `attachment; filename="${id}.${format}"`)
    .send(Readable.from(exportBatch(reader, id, format)));
}
