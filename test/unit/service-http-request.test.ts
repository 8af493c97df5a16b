import { Agent as HttpAgent, createServer, type Server } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { classifyFailure } from '../../src/service/classify-failure.ts';
import { HttpRequestError, sendHttp } from '../../src/service/http-request.ts';
import { networkFactsOf } from '../../src/service/service-client.ts';

/*
 * The service client's HTTP request (http-request.ts): how far a failed request got decides whether
 * the service may have acted on it (classify-failure.ts) — a request that may have been written is
 * never called `unavailable`, one that never left is never called `ambiguous`.
 */

const agents = () => ({
  http: new HttpAgent({ keepAlive: true, maxSockets: 4 }),
  https: new HttpsAgent({ keepAlive: true }),
});
const TIMEOUTS = { connectMs: 2_000, responseMs: 2_000, requestMs: 6_000 };

let server: Server | undefined;
const sockets = new Set<Socket>();
afterEach(async () => {
  for (const s of sockets) s.destroy();
  sockets.clear();
  await new Promise<void>((done) => (server ? server.close(() => done()) : done()));
  server = undefined;
});

/** A local server answering with `handler`; its URL. */
async function serve(handler: Parameters<typeof createServer>[1]): Promise<string> {
  server = createServer(handler);
  server.on('connection', (s) => sockets.add(s));
  await new Promise<void>((done) => server?.listen(0, '127.0.0.1', done));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function failure(p: Promise<unknown>): Promise<HttpRequestError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(HttpRequestError);
  return err as HttpRequestError;
}

const kindOf = (err: unknown) => classifyFailure(networkFactsOf(err)).kind;

describe('sendHttp', () => {
  it('answers status, headers and body, with the body sent whole (content-length)', async () => {
    const url = await serve((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        res.setHeader('retry-after', '3');
        res.statusCode = 429;
        res.end(JSON.stringify({ got: body, length: req.headers['content-length'] ?? null }));
      });
    });
    const a = agents();
    const body = JSON.stringify({ note: 'é' });
    const answer = await sendHttp(`${url}/x`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      agents: a,
      timeouts: TIMEOUTS,
    });
    expect(answer.status).toBe(429);
    expect(answer.headers['retry-after']).toBe('3');
    expect(JSON.parse(answer.body)).toEqual({ got: body, length: String(Buffer.byteLength(body)) });
    a.http.destroy();
  });

  it('a refused connection never left: not_connected, unavailable', async () => {
    const url = await serve(() => {});
    const port = new URL(url).port;
    await new Promise<void>((done) => server?.close(() => done()));
    server = undefined;
    const err = await failure(
      sendHttp(`http://127.0.0.1:${port}/x`, {
        method: 'POST',
        headers: {},
        body: '{}',
        agents: agents(),
        timeouts: TIMEOUTS,
      }),
    );
    expect(err).toMatchObject({ code: 'ECONNREFUSED', sent: 'not_connected' });
    expect(kindOf(err)).toBe('unavailable');
  });

  it('a reset after the request was read may have been acted on: written, ambiguous', async () => {
    const url = await serve((req) => {
      req.resume();
      req.on('end', () => req.socket.destroy());
    });
    const err = await failure(
      sendHttp(`${url}/x`, { method: 'POST', headers: {}, body: '{}', agents: agents(), timeouts: TIMEOUTS }),
    );
    expect(err).toMatchObject({ code: 'ECONNRESET', sent: 'written' });
    expect(kindOf(err)).toBe('ambiguous');
  });

  it('a reset before the request was whole reached the service half: not_written, unavailable', async () => {
    // 32 MB cannot all be handed to the socket before the server, reading its first bytes, resets it.
    const url = await serve((req) => req.once('data', () => req.socket.resetAndDestroy()));
    const err = await failure(
      sendHttp(`${url}/x`, {
        method: 'POST',
        headers: {},
        body: 'x'.repeat(32 * 1024 * 1024),
        agents: agents(),
        timeouts: TIMEOUTS,
      }),
    );
    expect(err.sent).toBe('not_written');
    expect(kindOf(err)).toBe('unavailable');
  });

  it('no answer after the request was written: its response timeout, ambiguous', async () => {
    const url = await serve((req) => req.resume());
    const err = await failure(
      sendHttp(`${url}/x`, {
        method: 'POST',
        headers: {},
        body: '{}',
        agents: agents(),
        timeouts: { connectMs: 2_000, responseMs: 150, requestMs: 6_000 },
      }),
    );
    expect(err).toMatchObject({ code: 'ETIMEDOUT', sent: 'written' });
    expect(['response', 'socket']).toContain(err.timeoutEvent);
    expect(kindOf(err)).toBe('ambiguous');
  });

  it('a body cut off after the headers: written, ambiguous', async () => {
    const url = await serve((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-length': '100' });
      res.write('{"partial":');
      setImmediate(() => res.socket?.destroy());
    });
    const err = await failure(
      sendHttp(`${url}/x`, {
        method: 'GET',
        headers: {},
        body: undefined,
        agents: agents(),
        timeouts: TIMEOUTS,
      }),
    );
    expect(err.sent).toBe('written');
    expect(kindOf(err)).toBe('ambiguous');
  });

  it('an abort after the request was written is ambiguous; one before it left is unavailable', async () => {
    const url = await serve((req) => req.resume());
    const written = new AbortController();
    const p = sendHttp(`${url}/x`, {
      method: 'POST',
      headers: {},
      body: '{}',
      agents: agents(),
      timeouts: TIMEOUTS,
      signal: written.signal,
    });
    await new Promise<void>((done) => server?.once('request', () => done()));
    written.abort();
    const late = await failure(p);
    expect(late).toMatchObject({ code: 'ERR_ABORTED', sent: 'written' });
    expect(kindOf(late)).toBe('ambiguous');

    const early = await failure(
      sendHttp(`${url}/x`, {
        method: 'POST',
        headers: {},
        body: '{}',
        agents: agents(),
        timeouts: TIMEOUTS,
        signal: AbortSignal.abort(),
      }),
    );
    expect(early).toMatchObject({ code: 'ERR_ABORTED', sent: 'not_connected' });
    expect(kindOf(early)).toBe('unavailable');
  });
});
