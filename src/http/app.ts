import Fastify, {
  LogController,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type RawReplyDefaultExpression,
  type RawRequestDefaultExpression,
  type RawServerDefault,
} from 'fastify';
import type { Logger } from '../log/logger.ts';
import type { Credential } from '../domain/access.ts';
import type { UsdcBatchError } from '../domain/errors.ts';
import { ConflictError, ValidationError } from '../domain/errors.ts';
import { FourEyesError, NotFoundError, StaleDigestError } from '../ops/ops-error.ts';
import { createQueueMonitor } from '../queue/queue-monitor.ts';
import { createAccessList, credentialFor, type AccessList } from './access-list.ts';
import { basicPassword, bearerToken } from './auth.ts';
import { errorDocument, HttpError } from './http-errors.ts';
import type { AppDeps, RouteDeps, RoutePlugin } from './route-deps.ts';
import { mayUse, ROLES_FOR, rolesText, ruleOf, type RouteRule } from './route-table.ts';
import { registerOpenApi } from './openapi.ts';
import { ROUTES } from './routes/index.ts';
import { capConnections, closeAfterRefusal, serverTimeouts } from './server-limits.ts';
import {
  AUTH_FAILURE_LIMITS,
  blockedFor,
  createAuthFailures,
  noteAuthFailure,
  type AuthFailures,
} from './auth-failures.ts';
import { AuditFileError } from '../store/audit-file.ts';
import { ReplicasNotConfirmedError } from '../store/replica-acks.ts';
import { parseJsonBody } from './json-body.ts';
import { scanJsonBody } from './json-scan.ts';
import { activeTracing } from '../trace/tracing.ts';
import {
  clientOf,
  drainRefusedBody,
  escapeJsonAnswer,
  loggedUrl,
  repeatedQueryParam,
  securityHeaders,
  setSecurityHeaders,
} from './request-guards.ts';

export type AppOptions = {
  /** Largest accepted request body, bytes (413 above). Default 10 MB. */
  readonly bodyLimit?: number;
  /** Routes added after the built-in ones of `routes/index.ts`. */
  readonly extraRoutes?: readonly RoutePlugin[];
};

export const DEFAULT_BODY_LIMIT = 10 * 1024 * 1024;

/** A route the app registered, with its entry of the route table (the role matrix test walks them). */
export type RegisteredRoute = { readonly method: string; readonly url: string; readonly rule: RouteRule };

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route registered, as registered (HEAD routes included), with its table entry. */
    readonly registeredRoutes: readonly RegisteredRoute[];
  }
}

/**
 * Builds the HTTP API (docs/http-api.md) without starting it: `serve` listens, tests use `inject()`.
 * Every route needs a credential whose roles cover its entry in the route table (route-table.ts),
 * checked before its handler; a route the table does not know stops the build.
 */
export async function buildApp(deps: AppDeps, options: AppOptions = {}): Promise<FastifyInstance> {
  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const failures = createAuthFailures({ ...AUTH_FAILURE_LIMITS, limit: deps.config.httpAuthFailureLimit });
  const now = deps.now ?? Date.now;
  const access = deps.access ?? createAccessList(deps.config.credentials);
  const gate = (request: FastifyRequest, reply: FastifyReply, rule: RouteRule | undefined) =>
    gateRequest({ access, failures, now }, request, reply, rule);
  // Fastify's own per-request lines are off: the onResponse hook below logs one line per request.
  const app = Fastify({
    loggerInstance: deps.logger,
    bodyLimit,
    // HTTP_TRUSTED_PROXIES: a request from one of these names its client in X-Forwarded-For, which
    // the failure limit counts by (request.ip); from anywhere else the header is ignored.
    trustProxy: deps.config.httpTrustedProxies.length > 0 ? [...deps.config.httpTrustedProxies] : false,
    logController: new LogController({ disableRequestLogging: true }),
    ...serverTimeouts(deps.config),
    // A path Fastify cannot route (a malformed %-escape, a parameter over 100 characters) is
    // authenticated like any other request, then answered in the API's format without echoing it.
    frameworkErrors: (err, request, reply) =>
      answerFrameworkError(gate, (client) => noteAuthFailure(failures, client, now()), err, request, reply),
  });
  capConnections(app.server, deps.config, deps.logger);
  app.decorateRequest('credential', null as Credential | null);
  noteRouteRules(app);
  addAnswerHooks(app, deps.config.httpRequestTimeoutMs);

  useBoundedJsonParser(app);

  const queues =
    deps.queues ?? createQueueMonitor({ connection: deps.redis, prefix: deps.config.queuePrefix });
  if (!deps.queues) app.addHook('onClose', async () => await queues.close());
  const routeDeps: RouteDeps = { ...deps, queues };

  addRequestHooks(app, { failures, now }, gate);

  setErrorAnswers(app);

  describeOnly(app);
  await registerOpenApi(app as unknown as FastifyInstance);

  for (const route of [...ROUTES, ...(options.extraRoutes ?? [])])
    await app.register(route, { deps: routeDeps });
  // Typed with the base logger so route plugins need not know it is pino.
  return app as unknown as FastifyInstance;
}

/** The app as buildApp makes it (its logger is the process's pino logger). */
type App = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, Logger>;

/** Before any route is added (its plugins inherit the hook): each route gets its table entry. */
function noteRouteRules(app: App): void {
  const registered: RegisteredRoute[] = [];
  app.decorate('registeredRoutes', registered);
  app.addHook('onRoute', (route) => {
    const methods = [route.method].flat();
    const rules = methods.map((m) => ruleOf(m, route.url));
    if (rules.some((r) => r === undefined)) {
      throw new Error(
        `route ${methods.join(',')} ${route.url} has no entry in the route table (src/http/route-table.ts)`,
      );
    }
    if (new Set(rules.map((r) => r?.access)).size > 1) {
      throw new Error(
        `route ${methods.join(',')} ${route.url} needs different roles per method: register them apart`,
      );
    }
    route.config = { ...route.config, rule: rules[0] as RouteRule };
    for (const method of methods) registered.push({ method, url: route.url, rule: rules[0] as RouteRule });
  });
}

/** What every answer gets on its way out: refusals close, security headers, escaped JSON, drained 413s. */
function addAnswerHooks(app: App, requestTimeoutMs: number): void {
  app.addHook('onSend', closeAfterRefusal);
  app.addHook('onSend', securityHeaders);
  app.addHook('onSend', escapeJsonAnswer);
  app.addHook('onSend', async (request, reply, payload) => {
    if (reply.statusCode === 413) {
      // Fastify closes the connection after any body it could not parse; a 413's is drained
      // instead (request-guards.ts), so the client reads its answer and may keep the connection.
      reply.removeHeader('connection');
      drainRefusedBody(request.raw, requestTimeoutMs);
    }
    return payload;
  });
}

/** Every JSON body goes through the bounded parser (no string over MAX_JSON_STRING_LENGTH). */
function useBoundedJsonParser(app: App): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = (body as string).replace(/^\uFEFF/, '');
    scanJsonBody(text).then(
      () => {
        try {
          done(null, parseJsonBody(text));
        } catch (err) {
          done(err as Error, undefined);
        }
      },
      (err: unknown) => done(err as Error, undefined),
    );
  });
}

/** The request's trace name, the access gate before every route, and one log line per request. */
function addRequestHooks(
  app: App,
  auth: { readonly failures: AuthFailures; readonly now: () => number },
  gate: (
    request: FastifyRequest,
    reply: FastifyReply,
    rule: RouteRule | undefined,
  ) => ReturnType<typeof gateRequest>,
): void {
  const { failures, now } = auth;
  // With tracing on (docs/traces.md), a request's span is named after its route (before the
  // gate: a refused request's too).
  const tracing = activeTracing();
  if (tracing) {
    app.addHook('onRequest', async (request) => {
      if (request.routeOptions.url) tracing.nameRequest(request.method, request.routeOptions.url);
    });
  }
  // The refusal is sent from the hook itself (not thrown): routes of plugins with their own error
  // handler (bull-board's) answer it in this API's format too. Routes Fastify does not know (404)
  // are authenticated as well, so an unauthenticated caller learns nothing about them.
  app.addHook('onRequest', async (request, reply) => {
    const refused = gate(request, reply, request.routeOptions.config?.rule);
    if (refused) return refused;
  });

  app.addHook('onResponse', async (request, reply) => {
    // Every 401 counts, the signature check's included (it answers from its handler).
    if (reply.statusCode === 401) noteAuthFailure(failures, clientOf(request), now());
    request.log.info(
      {
        method: request.method,
        url: loggedUrl(request.url),
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      'request',
    );
  });
}

/** Errors and unknown routes answer in the API's own error document. */
function setErrorAnswers(app: App): void {
  app.setErrorHandler(async (err: FastifyError | UsdcBatchError | Error, request, reply) => {
    const { status, code, message, errors, errorCount } = errorReply(err);
    if (status >= 500) request.log.error({ err }, 'request failed');
    const body = errorDocument(status, code, message, errors, errorCount);
    // docs/access.md "Four eyes": a 409 of an approval names the digest to review now.
    if (err instanceof StaleDigestError) {
      return reply
        .status(status)
        .send({ ...body, approval_digest: err.currentDigest, digest: err.currentDigest });
    }
    return reply.status(status).send(body);
  });

  app.setNotFoundHandler(async (request, reply) =>
    reply
      .status(404)
      .send(
        errorDocument(404, 'USDC_HTTP_NOT_FOUND', `no route ${request.method} ${request.url.split('?')[0]}`),
      ),
  );
}

// The routes' schemas describe the API (GET /openapi.json); they neither check requests nor shape
// answers. The handlers check their inputs (params.ts and the ingest code) and answer in the API's
// own error format — a batch id no batch can have is a 404, a bad query a USDC_HTTP_BAD_QUERY —
// where schema validation would answer 400 FST_ERR_VALIDATION and coerce query strings to
// numbers. Answers go out as the handlers built them (JSON.stringify, as without schemas): a
// serializer compiled from a schema drops undeclared fields and turns a null into "" or 0 where
// a schema slips, and a status document must never lose or change a field for that.
// test/integration/http-openapi.test.ts checks real answers against the declared schemas.
function describeOnly(app: App): void {
  app.setValidatorCompiler(() => () => true);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
}

type GateDeps = { readonly access: AccessList; readonly failures: AuthFailures; readonly now: () => number };

/**
 * What every request meets before its route (docs/access.md): a request without a known
 * credential 401 — or 429 while its client address is blocked after repeated failures (docs/http-api.md: "429
 * on repeated failures"; a valid credential is never refused by it) — one whose credential's roles do not cover the route 403 naming the roles that
 * do, and then, authenticated, a query parameter given twice 400. A request no route takes (a 404,
 * an unroutable path) needs a credential, any. Returns the reply when it answered, undefined when
 * the request goes on.
 */
function gateRequest(
  deps: GateDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  rule: RouteRule | undefined,
): FastifyReply | undefined {
  if (rule?.access === 'public') return undefined;
  const header = request.headers.authorization;
  const token = bearerToken(header) ?? (rule?.login ? basicPassword(header) : undefined);
  const credential = token === undefined ? undefined : credentialFor(deps.access, token);
  // The failure limit slows guessing down; it never refuses a valid credential (docs/http-api.md):
  // a client address that failed too often gets 429 for anything else meanwhile.
  const waitMs = credential ? 0 : blockedFor(deps.failures, clientOf(request), deps.now());
  if (waitMs > 0) {
    const seconds = Math.ceil(waitMs / 1000);
    return reply
      .status(429)
      .header('connection', 'close')
      .header('retry-after', String(seconds))
      .send(
        errorDocument(
          429,
          'USDC_HTTP_TOO_MANY_FAILURES',
          `too many failed authentications from this address: try again in ${seconds} s`,
        ),
      );
  }
  if (!credential) {
    if (rule?.login) {
      reply.header('www-authenticate', 'Basic realm="usdc-batch dashboard", charset="UTF-8"');
    }
    // A refused client cannot keep the connection open by trickling a body (server-limits.ts).
    return reply
      .status(401)
      .header('connection', 'close')
      .send(errorDocument(401, 'USDC_HTTP_UNAUTHORIZED', 'missing or wrong bearer token'));
  }
  request.credential = credential;
  if (rule && !mayUse(credential.roles, rule.access)) {
    return reply.status(403).send({
      ...errorDocument(
        403,
        'USDC_HTTP_FORBIDDEN',
        `this route needs ${rolesText(rule.access)}; the credential "${credential.name}" has ${credential.roles.join(', ')}`,
      ),
      roles: ROLES_FOR[rule.access],
    });
  }
  const repeated = repeatedQueryParam(request.query);
  if (repeated !== undefined) {
    const name = repeated.slice(0, 40).replace(/[^\x20-\x7e]/g, '?');
    return reply
      .status(400)
      .send(errorDocument(400, 'USDC_HTTP_BAD_QUERY', `query parameter "${name}" is given more than once`));
  }
  return undefined;
}

/**
 * Fastify's own refusals of a path it cannot route (FST_ERR_BAD_URL: a malformed %-escape;
 * FST_ERR_MAX_PARAM_LENGTH: a parameter over 100 characters). They come before any hook, so the
 * gate, the headers and the request's log line are done here; the path is never echoed.
 */
function answerFrameworkError(
  gate: (
    request: FastifyRequest,
    reply: FastifyReply,
    rule: RouteRule | undefined,
  ) => FastifyReply | undefined,
  noteFailure: (client: string) => void,
  err: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  setSecurityHeaders(reply);
  reply.raw.once('finish', () => {
    if (reply.statusCode === 401) noteFailure(clientOf(request));
    request.log.info(
      { method: request.method, url: '[unroutable]', status: reply.statusCode, code: err.code },
      'request',
    );
  });
  const refused = gate(request, reply, undefined);
  if (refused) return refused;
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    return reply
      .status(404)
      .send(
        errorDocument(
          404,
          'USDC_HTTP_NOT_FOUND',
          'no such resource: a path parameter is over 100 characters',
        ),
      );
  }
  if (err.code === 'FST_ERR_BAD_URL') {
    return reply
      .status(400)
      .send(errorDocument(400, 'USDC_HTTP_BAD_URL', 'the path has a malformed %-escape'));
  }
  return reply.status(500).send(errorDocument(500, 'USDC_HTTP_INTERNAL', 'internal error'));
}

/** The status, code and message of an error answer: the API's own errors keep theirs. */
function errorReply(err: FastifyError | UsdcBatchError | Error): {
  status: number;
  code: string;
  message: string;
  errors: unknown;
  errorCount: number | undefined;
} {
  let status = 500;
  let code = 'USDC_HTTP_INTERNAL';
  let message = 'internal error';
  let errors: unknown;
  let errorCount: number | undefined;
  if (err instanceof HttpError) {
    status = err.statusCode;
    code = err.code;
    message = err.shortMessage;
    errors = err.errors;
    errorCount = err.errorCount;
  } else if (err instanceof FourEyesError) {
    status = 403;
    code = err.code;
    message = err.shortMessage;
  } else if (err instanceof NotFoundError) {
    status = 404;
    code = err.code;
    message = err.shortMessage;
  } else if (err instanceof ConflictError) {
    status = 409;
    code = err.code;
    message = err.shortMessage;
  } else if (err instanceof AuditFileError) {
    // docs/audit.md: the action is done but its line is not in AUDIT_LOG_FILE: not acknowledged.
    status = 503;
    code = err.code;
    message = err.shortMessage;
  } else if (err instanceof ReplicasNotConfirmedError) {
    // docs/replicated-redis.md: the change may be lost in a failover, so it is not acknowledged.
    status = 503;
    code = err.code;
    message = err.shortMessage;
  } else if (err instanceof ValidationError) {
    status = 422;
    code = err.code;
    message = err.shortMessage;
  } else if ('statusCode' in err && typeof err.statusCode === 'number' && err.statusCode < 500) {
    // Fastify's own errors (body too large, unsupported media type) carry their status and code.
    status = err.statusCode;
    code = (err as FastifyError).code ?? 'USDC_HTTP_BAD_REQUEST';
    message = err.message;
  }
  return { status, code, message, errors, errorCount };
}
