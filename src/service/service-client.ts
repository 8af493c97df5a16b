import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { RequestError, TimeoutError } from 'got';
import type { IncomingHttpHeaders } from 'node:http';
import pRetry from 'p-retry';
import type { Secret } from '../config/config.ts';
import { DEFAULTS } from '../config/defaults.ts';
import { formatUsdc } from '../domain/money.ts';
import type { Logger } from '../log/logger.ts';
import { classifyFailure, type FailureFacts } from './classify-failure.ts';
import { HttpRequestError, sendHttp, type HttpTimeouts } from './http-request.ts';
import {
  parseBuildTx,
  parseEstimate,
  parseIntentStatus,
  parseServiceError,
  parseSubmit,
  parseTransfer,
  type Parsed,
} from './parse-response.ts';
import { ServiceError, isServiceError, scrub } from './service-error.ts';
import type {
  BuildTxResult,
  CallOptions,
  FailureKind,
  FeeEstimate,
  IntentStatus,
  Operation,
  ServiceClient,
  SubmitResult,
  TransferRequestBody,
  TransferResult,
} from './types.ts';

export type CallOutcome = 'ok' | FailureKind;

export type ServiceClientDeps = {
  readonly baseUrl: string;
  readonly apiKey: Secret;
  /** Default 3 s (DEFAULTS.SERVICE_CONNECT_TIMEOUT_MS). */
  readonly connectTimeoutMs?: number | undefined;
  /** From the request written to the response headers, and socket idle after that. Default 10 s. */
  readonly responseTimeoutMs?: number | undefined;
  readonly logger?: Logger | undefined;
  /**
   * Awaited before every HTTP request, each p-retry attempt included: the worker's shared
   * `API_RATE_LIMIT` slot. Default none.
   */
  readonly beforeRequest?: (() => Promise<void>) | undefined;
  /** Called once per HTTP request (each p-retry attempt counts), for metrics. */
  readonly onCall?: ((operation: Operation, outcome: CallOutcome, ms: number) => void) | undefined;
  /** Retries of the calls that are safe to repeat (estimate, status). Default 2 (3 attempts). */
  readonly safeRetries?: number | undefined;
  /** First backoff of those retries. Default 250 ms. */
  readonly retryMinDelayMs?: number | undefined;
  /** A 429 asking to wait longer than this is handed back to the caller instead. Default 5 s. */
  readonly maxRetryAfterMs?: number | undefined;
};

/** The client plus `close()`, which drops the keep-alive sockets (for tests and shutdown). */
export type ClosableServiceClient = ServiceClient & { close(): void };

type RawResult = { status: number; body: unknown; bodyOk: boolean; headers: IncomingHttpHeaders };

/** How far a failed request (ours, http-request.ts, or got's) got: see FailureFacts. */
export function networkFactsOf(err: unknown): FailureFacts {
  if (err instanceof HttpRequestError)
    return { type: 'network', code: err.code, sent: err.sent, timeoutEvent: err.timeoutEvent };
  const code = (err as { code?: unknown }).code;
  const timings = err instanceof RequestError ? err.timings : undefined;
  let sent: 'not_connected' | 'not_written' | 'written' | 'unknown' = 'unknown';
  if (timings) {
    if (timings.connect === undefined) sent = 'not_connected';
    else if (timings.upload === undefined) sent = 'not_written';
    else sent = 'written';
  }
  return {
    type: 'network',
    code: typeof code === 'string' ? code : undefined,
    sent,
    timeoutEvent: err instanceof TimeoutError ? err.event : undefined,
  };
}

type EstimateRequest = Parameters<ServiceClient['estimate']>[0];
type BuildTxRequest = Parameters<ServiceClient['buildSolanaTx']>[0];
type SubmitRequest = Parameters<ServiceClient['submitSolanaTx']>[0];

/** A client's state: its deps, the timeouts and agents it sends with, the secrets its errors scrub. */
type Client = {
  readonly deps: ServiceClientDeps;
  readonly base: string;
  readonly secrets: readonly string[];
  readonly timeouts: HttpTimeouts;
  readonly agent: { readonly http: HttpAgent; readonly https: HttpsAgent };
  readonly safeRetries: number;
  readonly maxRetryAfterMs: number;
};

/** One HTTP call: what to send, how to read a 2xx body, and what a 404 means (when it means something). */
type CallSpec<T> = {
  readonly operation: Operation;
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly json: unknown;
  readonly options: CallOptions | undefined;
  readonly parse: (body: unknown) => Parsed<T>;
  readonly on404?: () => T;
};

/**
 * The transfer-service client: one HTTP request per call, no retries inside it; only estimate and
 * status (safe to repeat) are wrapped in p-retry. Every failure is a ServiceError classified by
 * `classifyFailure`. Wires the top-level calls below to one client state.
 */
export function createServiceClient(deps: ServiceClientDeps): ClosableServiceClient {
  const c = clientOf(deps);
  return {
    estimate: (req, options) => estimate(c, req, options),
    transfer: (req, options) => transfer(c, req, options),
    buildSolanaTx: (req, options) => buildSolanaTx(c, req, options),
    submitSolanaTx: (req, options) => submitSolanaTx(c, req, options),
    getIntentStatus: (intentId, options) => getIntentStatus(c, intentId, options),
    close: () => closeClient(c),
  };
}

function clientOf(deps: ServiceClientDeps): Client {
  const connectMs = deps.connectTimeoutMs ?? DEFAULTS.SERVICE_CONNECT_TIMEOUT_MS;
  const responseMs = deps.responseTimeoutMs ?? DEFAULTS.SERVICE_RESPONSE_TIMEOUT_MS;
  // Idle sockets are dropped after 4 s, before a typical server's 5 s keep-alive timeout, so a
  // request is rarely written into a socket the server is closing (that would read as ambiguous).
  const agentOptions = { keepAlive: true, keepAliveMsecs: 1_000, maxSockets: 64, timeout: 4_000 };
  const agent = { http: new HttpAgent(agentOptions), https: new HttpsAgent(agentOptions) };
  // No retries, no redirects followed; every status is an answer (http-request.ts).
  const timeouts = { connectMs, responseMs, requestMs: connectMs + responseMs * 2 };
  return {
    deps,
    base: deps.baseUrl.replace(/\/+$/, ''),
    secrets: [deps.apiKey.reveal()],
    timeouts,
    agent,
    safeRetries: deps.safeRetries ?? 2,
    maxRetryAfterMs: deps.maxRetryAfterMs ?? 5_000,
  };
}

function closeClient(c: Client): void {
  c.agent.http.destroy();
  c.agent.https.destroy();
}

function estimate(c: Client, req: EstimateRequest, options?: CallOptions): Promise<FeeEstimate> {
  const json = { from: req.from, to: req.to, amount: formatUsdc(req.amount) };
  const spec = { operation: 'estimate', method: 'POST', path: '/sdk/v1/estimate', json, options } as const;
  return repeatable(c, () => call(c, { ...spec, parse: parseEstimate }), options?.signal);
}

function transfer(c: Client, req: TransferRequestBody, options: CallOptions): Promise<TransferResult> {
  const json = {
    from: req.from,
    to: req.to,
    amount: formatUsdc(req.amount),
    recipient: req.recipient,
    permit: req.permit,
  };
  return call(c, {
    operation: 'transfer',
    method: 'POST',
    path: '/sdk/v1/transfer',
    json,
    options,
    parse: parseTransfer,
  });
}

function buildSolanaTx(
  c: Client,
  req: BuildTxRequest,
  options: CallOptions | undefined,
): Promise<BuildTxResult> {
  const json = {
    to: req.to,
    amount: formatUsdc(req.amount),
    from_wallet: req.fromWallet,
    recipient: req.recipient,
  };
  return call(c, {
    operation: 'build_tx',
    method: 'POST',
    path: '/sdk/v1/solana/build-tx',
    json,
    options,
    parse: parseBuildTx,
  });
}

function submitSolanaTx(c: Client, req: SubmitRequest, options: CallOptions): Promise<SubmitResult> {
  const json = { intent_id: req.intentId, signed_transaction: req.signedTransaction };
  return call(c, {
    operation: 'submit',
    method: 'POST',
    path: '/sdk/v1/solana/submit',
    json,
    options,
    parse: parseSubmit,
  });
}

function getIntentStatus(
  c: Client,
  intentId: string,
  options?: CallOptions,
): Promise<IntentStatus | undefined> {
  const spec: CallSpec<IntentStatus | undefined> = {
    operation: 'status',
    method: 'GET',
    path: `/sdk/v1/status/${encodeURIComponent(intentId)}`,
    json: undefined,
    options,
    parse: (b) => parseIntentStatus(b, intentId),
    on404: () => undefined,
  };
  return repeatable(c, () => call(c, spec), options?.signal);
}

/** One observed call: request, classify, parse; reports the outcome to onCall and the log. */
async function call<T>(c: Client, spec: CallSpec<T>): Promise<T> {
  // The rate-limit wait comes before the clock starts: latency is the service's, not ours.
  if (c.deps.beforeRequest) await c.deps.beforeRequest();
  const started = performance.now();
  const done = (outcome: CallOutcome, status: number | null, extra: Record<string, unknown> = {}) =>
    reportCall(c, spec, { elapsedMs: performance.now() - started, outcome, status, extra });
  let raw: RawResult;
  try {
    raw = await request(c, spec);
  } catch (err) {
    if (isServiceError(err)) done(err.kind, null, { reason: err.details });
    throw err;
  }
  if (raw.status === 404 && spec.on404) {
    done('ok', 404);
    return spec.on404();
  }
  if (raw.status < 200 || raw.status >= 300) {
    const err = errorFor(c, spec.operation, raw);
    done(err.kind, raw.status, { serviceCode: err.serviceCode });
    throw err;
  }
  const parsed: Parsed<T> = raw.bodyOk
    ? spec.parse(raw.body)
    : { ok: false, problem: 'the body is not valid JSON' };
  if (!parsed.ok) {
    const err = new ServiceError({
      operation: spec.operation,
      kind: classifyFailure({ type: 'response', status: raw.status }).kind,
      httpStatus: raw.status,
      reason: parsed.problem,
    });
    done(err.kind, raw.status, { reason: parsed.problem });
    throw err;
  }
  done('ok', raw.status);
  return parsed.value;
}

/** A call's outcome to onCall (metrics) and the log: debug when ok, warn when it failed. */
function reportCall(
  c: Client,
  spec: CallSpec<unknown>,
  call: {
    readonly elapsedMs: number;
    readonly outcome: CallOutcome;
    readonly status: number | null;
    readonly extra: Record<string, unknown>;
  },
): void {
  const { elapsedMs, outcome, status, extra } = call;
  const ms = Math.round(elapsedMs);
  c.deps.onCall?.(spec.operation, outcome, ms);
  const entry = {
    operation: spec.operation,
    outcome,
    httpStatus: status,
    ms,
    idempotencyKey: spec.options?.idempotencyKey,
    ...extra,
  };
  if (outcome === 'ok') c.deps.logger?.debug(entry, 'service call');
  else if (spec.options?.quiet) c.deps.logger?.debug(entry, 'service call failed');
  else c.deps.logger?.warn(entry, 'service call failed');
}

async function request(c: Client, spec: CallSpec<unknown>): Promise<RawResult> {
  const { json, options } = spec;
  const headers: Record<string, string> = {
    'x-api-key': c.deps.apiKey.reveal(),
    accept: 'application/json',
  };
  if (json !== undefined) headers['content-type'] = 'application/json';
  if (options?.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
  let response: Awaited<ReturnType<typeof sendHttp>>;
  try {
    response = await sendHttp(`${c.base}${spec.path}`, {
      method: spec.method,
      headers,
      body: json !== undefined ? JSON.stringify(json) : undefined,
      agents: c.agent,
      timeouts: c.timeouts,
      signal: options?.signal,
    });
  } catch (err) {
    throw networkError(c, spec.operation, err);
  }
  let body: unknown;
  let bodyOk = true;
  try {
    body = response.body.length > 0 ? JSON.parse(response.body) : undefined;
  } catch {
    bodyOk = false;
  }
  return { status: response.status, body, bodyOk, headers: response.headers };
}

/** A request that got no response: classified by how far it got. */
function networkError(c: Client, operation: Operation, err: unknown): ServiceError {
  const facts = networkFactsOf(err);
  const { kind } = classifyFailure(facts);
  const code = facts.type === 'network' ? facts.code : undefined;
  const phase = facts.type === 'network' && facts.timeoutEvent ? ` (${facts.timeoutEvent} timeout)` : '';
  // An error may hold the request options (and so the API key): only its code and a scrubbed
  // message travel on.
  const cause = new Error(scrub(`${code ?? 'error'}${phase}: ${errMessage(err)}`, c.secrets));
  return new ServiceError({
    operation,
    kind,
    reason: `${code ?? 'network error'}${phase}${facts.type === 'network' ? `, request ${facts.sent}` : ''}`,
    cause,
  });
}

function errorFor(c: Client, operation: Operation, raw: RawResult): ServiceError {
  const retryAfterHeader = raw.headers['retry-after'];
  const { kind, retryAfterMs } = classifyFailure({
    type: 'response',
    status: raw.status,
    retryAfter: Array.isArray(retryAfterHeader) ? retryAfterHeader[0] : retryAfterHeader,
  });
  const se = raw.bodyOk ? parseServiceError(raw.body) : {};
  return new ServiceError({
    operation,
    kind,
    httpStatus: raw.status,
    serviceCode: se.code !== undefined ? scrub(se.code, c.secrets) : undefined,
    serviceMessage: se.message !== undefined ? scrub(se.message, c.secrets) : undefined,
    retryAfterMs,
  });
}

function retryable(c: Client, err: unknown): boolean {
  return (
    isServiceError(err) &&
    err.kind !== 'rejected' &&
    !(err.kind === 'rate_limited' && (err.retryAfterMs ?? 0) > c.maxRetryAfterMs)
  );
}

/** p-retry only around calls that are safe to repeat (they move no money). */
function repeatable<T>(c: Client, fn: () => Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  return pRetry(fn, {
    retries: c.safeRetries,
    minTimeout: c.deps.retryMinDelayMs ?? 250,
    factor: 2,
    maxTimeout: 2_000,
    randomize: true,
    ...(signal ? { signal } : {}),
    shouldRetry: ({ error }) => retryable(c, error),
    onFailedAttempt: async ({ error, retriesLeft }) => {
      // Honour the service's Retry-After (bounded) on top of the backoff.
      if (retriesLeft > 0 && isServiceError(error, 'rate_limited') && retryable(c, error))
        await sleep(error.retryAfterMs ?? 0);
    },
  });
}

function errMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
