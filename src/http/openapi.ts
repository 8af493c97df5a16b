import { readFileSync } from 'node:fs';
import fastifySwagger, { type SwaggerTransform } from '@fastify/swagger';
import type { FastifyInstance, FastifySchema } from 'fastify';
import type { RoutePlugin } from './route-deps.ts';
import { ROLES_FOR, ruleOf, type RouteRule } from './route-table.ts';
import { errorAnswers, errorDocument, ingestIssue } from './schemas/common.ts';
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
          'Batched USDC payouts: enqueue batches, read their status, operate them. Every route but /healthz needs `Authorization: Bearer <token>` of a credential whose roles cover it (metrics, viewer, submitter, operator, approver): each operation names them as its security scopes and in `x-roles`, and answers 403 to a credential without one of them.',
      },
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description:
              "a credential's token: an ACCESS_FILE entry (usdc-batch access token), or HOOK_TOKEN (hook: submitter, operator, viewer), APPROVER_TOKEN (approver: approver, viewer), METRICS_TOKEN (metrics: metrics)",
          },
          browserLogin: {
            type: 'http',
            scheme: 'basic',
            description: 'the batch pages and the dashboard: any user name, the token as the password',
          },
        },
      },
      security: [{ bearer: [] }],
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
    transform: describeRoute,
  });
}

/**
 * Each operation as the route table has it (route-table.ts): the roles that may use it, as the
 * scopes of its security requirement and in `x-roles`, and its 403; `/dashboard` as one page of the
 * API, bull-board's own routes under it hidden.
 */
const describeRoute: SwaggerTransform = ({ schema, url, route }) => {
  // bull-board serves its page at `/dashboard/` (and `/dashboard` leads there).
  if (url === '/dashboard/' && [route.method].flat().includes('GET')) {
    return { schema: withAccess(DASHBOARD_SCHEMA, ruleOf('GET', '/dashboard')), url: '/dashboard' };
  }
  if (url === '/dashboard' || url.startsWith('/dashboard/'))
    return { schema: { ...schema, hide: true }, url };
  const method = [route.method].flat()[0] ?? 'GET';
  return { schema: withAccess(schema, ruleOf(method, url)), url };
};

/** A route's schema with who may use it: security scopes, `x-roles`, its 403 and a line of description. */
function withAccess(schema: FastifySchema, rule: RouteRule | undefined): FastifySchema {
  if (!rule || rule.access === 'public') return { ...schema, security: [] };
  const roles = [...ROLES_FOR[rule.access]];
  const security = [{ bearer: roles }, ...(rule.login ? [{ browserLogin: roles }] : [])];
  const response = (schema.response ?? {}) as Record<string, unknown>;
  const forbidden = rule.login
    ? { description: `roles: ${roles.join(', ')}`, content: { 'text/html': { schema: { type: 'string' } } } }
    : errorAnswers(403)[403];
  const said = `Roles: ${roles.join(', ')}.`;
  return {
    ...schema,
    security,
    'x-roles': roles,
    description: schema.description ? `${schema.description} ${said}` : said,
    response: { ...response, 403: forbidden },
  } as FastifySchema;
}

const DASHBOARD_SCHEMA: FastifySchema = {
  tags: ['pages'],
  operationId: 'dashboard',
  summary: 'The queues in bull-board, read-only',
  response: { 200: { description: 'bull-board', content: { 'text/html': { schema: { type: 'string' } } } } },
};

/** `GET /openapi.json` (any reader: route-table.ts). */
export const openapiRoute: RoutePlugin = async (app) => {
  app.get('/openapi.json', { schema: openapiSchema }, async () => app.swagger());
};
