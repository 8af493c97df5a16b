import { request as httpRequest, type Agent as HttpAgent, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest, type Agent as HttpsAgent } from 'node:https';

/**
 * One HTTP request to the transfer service on node:http, with the facts a failure is classified by
 * (classify-failure.ts) — how far the request got — and the timeouts the client had from got:
 * `lookup` and `connect` (each `connectMs`), `response` (from the request written to the response
 * headers), `socket` (the socket idle that long, at any point) and `request` (the whole exchange).
 * A fraction of got's CPU per request; the worker makes three per transfer.
 *
 * How far it got, as got's timings said it: `not_connected` until the socket is connected (a reused
 * keep-alive socket is connected already), `not_written` until the whole request was handed to the
 * socket ('finish'), `written` after that — a failure after that may have been acted on.
 */
export type HttpTimeouts = {
  readonly connectMs: number;
  readonly responseMs: number;
  readonly requestMs: number;
};

export type HttpAnswer = {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
};

type Sent = 'not_connected' | 'not_written' | 'written';

/** A request that got no whole answer: its code, how far it got, and the timeout that ended it. */
export class HttpRequestError extends Error {
  override readonly name = 'HttpRequestError';
  readonly code: string | undefined;
  readonly sent: Sent;
  readonly timeoutEvent: string | undefined;
  constructor(message: string, facts: { code: string | undefined; sent: Sent; timeoutEvent?: string }) {
    super(message);
    this.code = facts.code;
    this.sent = facts.sent;
    this.timeoutEvent = facts.timeoutEvent;
  }
}

export function sendHttp(
  url: string,
  p: {
    readonly method: 'GET' | 'POST';
    readonly headers: Record<string, string>;
    readonly body: string | undefined;
    readonly agents: { readonly http: HttpAgent; readonly https: HttpsAgent };
    readonly timeouts: HttpTimeouts;
    readonly signal?: AbortSignal | undefined;
  },
): Promise<HttpAnswer> {
  return new Promise<HttpAnswer>((resolve, reject) => {
    const https = url.startsWith('https:');
    const headers = { ...p.headers };
    if (p.body !== undefined) headers['content-length'] = String(Buffer.byteLength(p.body));
    const req = (https ? httpsRequest : httpRequest)(url, {
      method: p.method,
      headers,
      agent: https ? p.agents.https : p.agents.http,
    });
    let sent: Sent = 'not_connected';
    let phase: NodeJS.Timeout | undefined;
    const timers = new Set<NodeJS.Timeout>();
    const after = (ms: number, event: string): NodeJS.Timeout => {
      const t = setTimeout(() => fail(`Timeout awaiting '${event}' for ${ms}ms`, 'ETIMEDOUT', event), ms);
      timers.add(t);
      return t;
    };
    const clearPhase = () => {
      if (phase) clearTimeout(phase);
      phase = undefined;
    };
    let settled = false;
    const settle = () => {
      settled = true;
      for (const t of timers) clearTimeout(t);
      p.signal?.removeEventListener('abort', onAbort);
    };
    function fail(message: string, code: string | undefined, timeoutEvent?: string): void {
      if (settled) return;
      settle();
      reject(new HttpRequestError(message, { code, sent, ...(timeoutEvent ? { timeoutEvent } : {}) }));
      req.destroy();
    }
    function onAbort(): void {
      fail('This operation was aborted.', 'ERR_ABORTED');
    }
    // First: a request destroyed from here on (an abort, a timeout) emits its error to this.
    req.on('error', (err: Error & { code?: string }) => fail(err.message, err.code));
    if (p.signal?.aborted) return onAbort();
    p.signal?.addEventListener('abort', onAbort, { once: true });
    after(p.timeouts.requestMs, 'request');
    req.setTimeout(p.timeouts.responseMs, () =>
      fail(`Timeout awaiting 'socket' for ${p.timeouts.responseMs}ms`, 'ETIMEDOUT', 'socket'),
    );
    req.on('socket', (socket) => {
      if (!socket.connecting) {
        sent = 'not_written';
        return;
      }
      phase = after(p.timeouts.connectMs, 'lookup');
      socket.once('lookup', () => {
        clearPhase();
        phase = after(p.timeouts.connectMs, 'connect');
      });
      socket.once('connect', () => {
        clearPhase();
        if (!settled) sent = 'not_written';
      });
    });
    let responded = false;
    req.on('finish', () => {
      if (settled) return;
      sent = 'written';
      if (!responded) phase = after(p.timeouts.responseMs, 'response');
    });
    req.on('response', (res) => {
      responded = true;
      clearPhase();
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('error', (err: Error & { code?: string }) => fail(err.message, err.code ?? 'ECONNRESET'));
      res.on('aborted', () => fail('The response was cut off', 'ECONNRESET'));
      res.on('end', () => {
        if (!res.complete) return fail('The response was cut off', 'ECONNRESET');
        if (settled) return;
        settle();
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      });
    });
    req.end(p.body);
  });
}
