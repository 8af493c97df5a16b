import type { Server } from 'node:http';
import type { FastifyReply } from 'fastify';
import type { Config } from '../config/config.ts';
import type { Logger } from '../log/logger.ts';

/*
 * What keeps slow and idle clients from holding the HTTP API (docs/http-api.md: "slow and idle
 * connections are closed"). A connection is only worth its file descriptor while it makes progress:
 * its headers must arrive within HTTP_HEADERS_TIMEOUT_MS, the whole request within
 * HTTP_REQUEST_TIMEOUT_MS (both answered 408 and closed by Node), a kept-alive connection may idle
 * HTTP_IDLE_TIMEOUT_MS between requests, a refused request (401, 429) closes its connection at
 * once, and no more than HTTP_MAX_CONNECTIONS are open at a time.
 */

export type ServerLimits = Pick<
  Config,
  'httpHeadersTimeoutMs' | 'httpRequestTimeoutMs' | 'httpIdleTimeoutMs' | 'httpMaxConnections'
>;

// Node checks the header and request deadlines of open connections on a timer (default every
// 30 s, so a 10 s limit could hold for 40 s); once a second keeps a limit within a second of itself.
const MAX_CHECK_INTERVAL_MS = 1_000;

/** The Fastify server options for the limits above. */
export function serverTimeouts(limits: ServerLimits) {
  return {
    requestTimeout: limits.httpRequestTimeoutMs,
    keepAliveTimeout: limits.httpIdleTimeoutMs,
    // No socket inactivity timeout: while a large batch is validated and written no byte moves on
    // its connection, and that must not cut its answer off. Senders are bounded by the deadlines.
    connectionTimeout: 0,
    http: {
      headersTimeout: limits.httpHeadersTimeoutMs,
      requestTimeout: limits.httpRequestTimeoutMs,
      keepAliveTimeout: limits.httpIdleTimeoutMs,
      connectionsCheckingInterval: Math.min(MAX_CHECK_INTERVAL_MS, limits.httpHeadersTimeoutMs),
    },
  };
}

/**
 * An `onSend` hook: a 401 or 429 is answered before (or instead of) reading the rest of the body,
 * and the connection is closed after the answer, so a client without the token cannot keep it open
 * by trickling a body. (A 413, sent to an authenticated client, reads and drops the rest of its body
 * instead, so the client can read why: `drainRefusedBody`.)
 */
export async function closeAfterRefusal<T>(_request: unknown, reply: FastifyReply, payload: T): Promise<T> {
  if (reply.statusCode === 401 || reply.statusCode === 429) reply.header('connection', 'close');
  return payload;
}

// A flood of dropped connections is logged once per interval, with how many, not once each.
const DROP_LOG_INTERVAL_MS = 10_000;

/** At most `httpMaxConnections` open at once; Node closes any connection beyond it on arrival. */
export function capConnections(server: Server, limits: ServerLimits, logger: Logger): void {
  server.maxConnections = limits.httpMaxConnections;
  let dropped = 0;
  let timer: NodeJS.Timeout | undefined;
  server.on('drop', () => {
    dropped++;
    timer ??= setTimeout(() => {
      logger.warn(
        { dropped, maxConnections: limits.httpMaxConnections },
        'connections refused: HTTP_MAX_CONNECTIONS reached',
      );
      dropped = 0;
      timer = undefined;
    }, DROP_LOG_INTERVAL_MS).unref();
  });
}
