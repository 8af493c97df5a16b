import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import got, { RequestError, TimeoutError, type Response } from 'got';
import pRetry from 'p-retry';
import type { Secret } from '../config/config.ts';
import { DEFAULTS } from '../config/defaults.ts';
import { formatUsdc } from '../domain/money.ts';
import type { Logger } from '../log/logger.ts';
import { classifyFailure, type FailureFacts } from './classify-failure.ts';
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
import type { CallOptions, FailureKind, Operation, ServiceClient } from './types.ts';

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

type RawResult = { status: number; body: unknown; bodyOk: boolean; headers: Response['headers'] };

/** How far a failed got request got: see FailureFacts. */
export function networkFactsOf(err: unknown): FailureFacts {
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

/**
 * The transfer-service client (docs/transfer-service.md §4): one HTTP request per call, no retries inside got; only
 * estimate and status (safe to repeat) are wrapped in p-retry. Every failure is a ServiceError
 * classified by `classifyFailure`.
 */
export function createServiceClient(deps: ServiceClientDeps): ClosableServiceClient {
  const base = deps.baseUrl.replace(/\/+$/, '');
  const connectMs = deps.connectTimeoutMs ?? DEFAULTS.SERVICE_CONNECT_TIMEOUT_MS;
  const responseMs = deps.responseTimeoutMs ?? DEFAULTS.SERVICE_RESPONSE_TIMEOUT_MS;
  const secrets = [deps.apiKey.reveal()];
  // Idle sockets are dropped after 4 s, before a typical server's 5 s keep-alive timeout, so a
  // request is rarely written into a socket the server is closing (that would read as ambiguous).
  const agentOptions = { keepAlive: true, keepAliveMsecs: 1_000, maxSockets: 64, timeout: 4_000 };
  const agent = { http: new HttpAgent(agentOptions), https: new HttpsAgent(agentOptions) };
  const http = got.extend({
    retry: { limit: 0 },
    throwHttpErrors: false,
    followRedirect: false,
    responseType: 'text',
    agent,
    timeout: {
      lookup: connectMs,
      connect: connectMs,
      response: responseMs,
      socket: responseMs,
      request: connectMs + responseMs * 2,
    },
  });

  const fail = (
    operation: Operation,
    init: Omit<ConstructorParameters<typeof ServiceError>[0], 'operation'>,
  ) => new ServiceError({ ...init, operation });

  async function request(
    operation: Operation,
    method: 'GET' | 'POST',
    path: string,
    json: unknown,
    options: CallOptions | undefined,
  ): Promise<RawResult> {
    const headers: Record<string, string> = {
      'x-api-key': deps.apiKey.reveal(),
      accept: 'application/json',
    };
    if (json !== undefined) headers['content-type'] = 'application/json';
    if (options?.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
    let response: Response<string>;
    try {
      response = await http(`${base}${path}`, {
        method,
        headers,
        ...(json !== undefined ? { body: JSON.stringify(json) } : {}),
        ...(options?.signal ? { signal: options.signal } : {}),
      });
    } catch (err) {
      const facts = networkFactsOf(err);
      const { kind } = classifyFailure(facts);
      const code = facts.type === 'network' ? facts.code : undefined;
      const phase = facts.type === 'network' && facts.timeoutEvent ? ` (${facts.timeoutEvent} timeout)` : '';
      // got's error holds the request options (and so the API key): only its code and a scrubbed
      // message travel on.
      const cause = new Error(scrub(`${code ?? 'error'}${phase}: ${errMessage(err)}`, secrets));
      throw fail(operation, {
        kind,
        reason: `${code ?? 'network error'}${phase}${facts.type === 'network' ? `, request ${facts.sent}` : ''}`,
        cause,
      });
    }
    let body: unknown;
    let bodyOk = true;
    try {
      body = response.body.length > 0 ? JSON.parse(response.body) : undefined;
    } catch {
      bodyOk = false;
    }
    return { status: response.statusCode, body, bodyOk, headers: response.headers };
  }

  function errorFor(operation: Operation, raw: RawResult): ServiceError {
    const retryAfterHeader = raw.headers['retry-after'];
    const { kind, retryAfterMs } = classifyFailure({
      type: 'response',
      status: raw.status,
      retryAfter: Array.isArray(retryAfterHeader) ? retryAfterHeader[0] : retryAfterHeader,
    });
    const se = raw.bodyOk ? parseServiceError(raw.body) : {};
    return fail(operation, {
      kind,
      httpStatus: raw.status,
      serviceCode: se.code !== undefined ? scrub(se.code, secrets) : undefined,
      serviceMessage: se.message !== undefined ? scrub(se.message, secrets) : undefined,
      retryAfterMs,
    });
  }

  /** One observed call: request, classify, parse; reports the outcome to onCall and the log. */
  async function call<T>(
    operation: Operation,
    method: 'GET' | 'POST',
    path: string,
    json: unknown,
    options: CallOptions | undefined,
    parse: (body: unknown) => Parsed<T>,
    on404?: () => T,
  ): Promise<T> {
    // The rate-limit wait comes before the clock starts: latency is the service's, not ours.
    if (deps.beforeRequest) await deps.beforeRequest();
    const started = performance.now();
    const done = (outcome: CallOutcome, status: number | null, extra: Record<string, unknown> = {}) => {
      const ms = Math.round(performance.now() - started);
      deps.onCall?.(operation, outcome, ms);
      const entry = {
        operation,
        outcome,
        httpStatus: status,
        ms,
        idempotencyKey: options?.idempotencyKey,
        ...extra,
      };
      if (outcome === 'ok') deps.logger?.debug(entry, 'service call');
      else deps.logger?.warn(entry, 'service call failed');
    };
    let raw: RawResult;
    try {
      raw = await request(operation, method, path, json, options);
    } catch (err) {
      if (isServiceError(err)) done(err.kind, null, { reason: err.details });
      throw err;
    }
    if (raw.status === 404 && on404) {
      done('ok', 404);
      return on404();
    }
    if (raw.status < 200 || raw.status >= 300) {
      const err = errorFor(operation, raw);
      done(err.kind, raw.status, { serviceCode: err.serviceCode });
      throw err;
    }
    const parsed: Parsed<T> = raw.bodyOk
      ? parse(raw.body)
      : { ok: false, problem: 'the body is not valid JSON' };
    if (!parsed.ok) {
      const err = fail(operation, {
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

  const safeRetries = deps.safeRetries ?? 2;
  const maxRetryAfterMs = deps.maxRetryAfterMs ?? 5_000;
  const retryable = (err: unknown): boolean =>
    isServiceError(err) &&
    err.kind !== 'rejected' &&
    !(err.kind === 'rate_limited' && (err.retryAfterMs ?? 0) > maxRetryAfterMs);

  /** p-retry only around calls that are safe to repeat (they move no money). */
  function repeatable<T>(fn: () => Promise<T>, signal: AbortSignal | undefined): Promise<T> {
    return pRetry(fn, {
      retries: safeRetries,
      minTimeout: deps.retryMinDelayMs ?? 250,
      factor: 2,
      maxTimeout: 2_000,
      randomize: true,
      ...(signal ? { signal } : {}),
      shouldRetry: ({ error }) => retryable(error),
      onFailedAttempt: async ({ error, retriesLeft }) => {
        // Honour the service's Retry-After (bounded) on top of the backoff.
        if (retriesLeft > 0 && isServiceError(error, 'rate_limited') && retryable(error))
          await sleep(error.retryAfterMs ?? 0);
      },
    });
  }

  const client: ClosableServiceClient = {
    estimate(req, options) {
      const body = { from: req.from, to: req.to, amount: formatUsdc(req.amount) };
      return repeatable(
        () => call('estimate', 'POST', '/sdk/v1/estimate', body, options, parseEstimate),
        options?.signal,
      );
    },
    transfer(req, options) {
      const body = {
        from: req.from,
        to: req.to,
        amount: formatUsdc(req.amount),
        recipient: req.recipient,
        permit: req.permit,
      };
      return call('transfer', 'POST', '/sdk/v1/transfer', body, options, parseTransfer);
    },
    buildSolanaTx(req, options) {
      const body = {
        to: req.to,
        amount: formatUsdc(req.amount),
        from_wallet: req.fromWallet,
        recipient: req.recipient,
      };
      return call('build_tx', 'POST', '/sdk/v1/solana/build-tx', body, options, parseBuildTx);
    },
    submitSolanaTx(req, options) {
      const body = { intent_id: req.intentId, signed_transaction: req.signedTransaction };
      return call('submit', 'POST', '/sdk/v1/solana/submit', body, options, parseSubmit);
    },
    getIntentStatus(intentId, options) {
      const path = `/sdk/v1/status/${encodeURIComponent(intentId)}`;
      return repeatable(
        () =>
          call(
            'status',
            'GET',
            path,
            undefined,
            options,
            (b) => parseIntentStatus(b, intentId),
            () => undefined,
          ),
        options?.signal,
      );
    },
    close() {
      agent.http.destroy();
      agent.https.destroy();
    },
  };
  return client;
}

function errMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
