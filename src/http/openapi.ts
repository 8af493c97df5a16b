import { readFileSync } from 'node:fs';
import fastifySwagger, { type SwaggerTransform } from '@fastify/swagger';
import type { FastifyInstance, FastifySchema } from 'fastify';
import type { RoutePlugin } from './route-deps.ts';
import { errorDocument, ingestIssue } from './schemas/common.ts';
import { openapiSchema } from './schemas/route-schemas.ts';
import { batchSummary, statusDocument, transferView } from './schemas/status-document.ts';

const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/**
 * Describes every route for `GET /openapi.json` (OpenAPI 3.1, from the routes' own schemas):
 * registered before the routes, so that @fastify/swagger sees each one as it is added.
 * bull-board's own routes under /dashboard are left out but for the page itself: they are its
 * internals, not this API.
 */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  for (const schema of [
    ingestIssue,
    { ...errorDocument, $id: 'ErrorDocument' },
    transferView,
    batchSummary,
    statusDocument,
  ]) {
    app.addSchema(schema);
  }
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'usdc-batch',
        version: VERSION,
        description:
          'Batched USDC payouts: enqueue batches, read their status, operate them. Every route but /healthz needs `Authorization: Bearer $HOOK_TOKEN` (approvals the approver token).',
      },
      components: {
        securitySchemes: {
          hookToken: { type: 'http', scheme: 'bearer', description: 'HOOK_TOKEN' },
          approverToken: {
            type: 'http',
            scheme: 'bearer',
            description: 'APPROVER_TOKEN (never the hook token)',
          },
          browserLogin: {
            type: 'http',
            scheme: 'basic',
            description: 'the batch pages and the dashboard: any user name, HOOK_TOKEN as the password',
          },
        },
      },
      security: [{ hookToken: [] }],
      tags: [
        { name: 'batches', description: 'enqueue and read batches' },
        { name: 'operations', description: 'operator actions (audited)' },
        { name: 'recipients', description: 'the address book' },
        { name: 'pages', description: 'HTML for people' },
        { name: 'health', description: 'liveness, readiness, metrics, this document' },
      ],
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) =>
        typeof json.$id === 'string' ? json.$id : `def-${i}`,
    },
    transform: describeDashboard,
  });
}

/** `/dashboard` as one page of the API; bull-board's own routes under it hidden. */
const describeDashboard: SwaggerTransform = ({ schema, url, route }) => {
  // bull-board serves its page at `/dashboard/` (and `/dashboard` leads there).
  if (url === '/dashboard/' && [route.method].flat().includes('GET')) {
    return { schema: DASHBOARD_SCHEMA, url: '/dashboard' };
  }
  if (url === '/dashboard' || url.startsWith('/dashboard/'))
    return { schema: { ...schema, hide: true }, url };
  return { schema, url };
};

const DASHBOARD_SCHEMA: FastifySchema = {
  tags: ['pages'],
  operationId: 'dashboard',
  summary: 'The queues in bull-board, read-only',
  security: [{ hookToken: [] }, { browserLogin: [] }],
  response: { 200: { description: 'bull-board', content: { 'text/html': { schema: { type: 'string' } } } } },
};

/** `GET /openapi.json` (hook token, like every other route but /healthz). */
export const openapiRoute: RoutePlugin = async (app) => {
  app.get('/openapi.json', { schema: openapiSchema }, async () => app.swagger());
};
