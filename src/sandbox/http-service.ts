import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { isEvmChain } from '../domain/chains.ts';
import { handleAdmin, type AdminContext } from './admin-routes.ts';
import { cctpRoute } from './cctp-api.ts';
import { estimate } from './estimate.ts';
import { transfer } from './evm-transfer.ts';
import { pickFault } from './faults.ts';
import { status } from './intent-status.ts';
import { createPlant } from './plants.ts';
import type { FaultKind, FaultOp } from './sandbox-config.ts';
import { readBody, send } from './http-io.ts';
import { err, type Reply, type ServiceState } from './service-state.ts';
import { buildTx, submit } from './solana-flow.ts';

type Route = {
  op: FaultOp;
  auth: 'key' | 'bearer' | 'none';
  /** `receivedAt`: when the request arrived (ms since the epoch), before the configured latency. */
  run: (
    body: Record<string, unknown>,
    raw: string,
    key: string | null,
    receivedAt: number,
  ) => Reply | Promise<Reply>;
};

/** The running HTTP side of the sandbox; `close()` ends hanging answers and open sockets. */
type SandboxHttp = { readonly server: Server; readonly port: number; close(): Promise<void> };

type HttpContext = {
  readonly state: ServiceState;
  readonly admin: AdminContext;
  readonly hanging: Set<ServerResponse>;
  readonly closing: AbortController;
};

/**
 * The HTTP transfer service (docs/transfer-service.md §4) in front of the chains: routing, API-key and bearer auth, the
 * request log a rate limiter sees, faults, `Idempotency-Key` replay, `/rpc/<CHAIN>` and the
 * loopback-only admin routes.
 */
export async function startSandboxHttp(
  state: ServiceState,
  admin: AdminContext,
  listen: { port: number; host: string },
): Promise<SandboxHttp> {
  const ctx: HttpContext = { state, admin, hanging: new Set(), closing: new AbortController() };
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    handle(ctx, req, res).catch((e: unknown) => {
      send(res, err(500, 'internal_error', e instanceof Error ? e.message.slice(0, 200) : 'internal error'));
    });
  });
  server.on('connection', (sock) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address();
  return {
    server,
    port: typeof addr === 'object' && addr ? addr.port : 0,
    async close() {
      ctx.closing.abort();
      for (const res of ctx.hanging) res.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const sock of sockets) sock.destroy();
      });
    },
  };
}

function route(s: ServiceState, method: string, path: string, query: URLSearchParams): Route | undefined {
  const cctp = cctpRoute(s, method, path, query);
  if (cctp) return { op: 'cctp', auth: 'none', run: cctp };
  if (method === 'POST' && path === '/sdk/v1/estimate')
    return { op: 'estimate', auth: 'key', run: (b) => estimate(s, b) };
  if (method === 'POST' && path === '/sdk/v1/transfer')
    return { op: 'transfer', auth: 'key', run: (b, _r, k, at) => transfer(s, b, k, at) };
  if (method === 'POST' && path === '/sdk/v1/solana/build-tx')
    return { op: 'build_tx', auth: 'key', run: (b) => buildTx(s, b) };
  if (method === 'POST' && path === '/sdk/v1/solana/submit')
    return { op: 'submit', auth: 'key', run: (b, _r, k, at) => submit(s, b, k, at) };
  const st = /^\/sdk\/v1\/status\/([^/]+)$/.exec(path);
  if (method === 'GET' && st) {
    const id = decodeURIComponent(st[1] as string);
    return {
      op: 'status',
      auth: 'key',
      run: () => (s.config.statusRoute ? status(s, id) : err(404, 'not_found', 'no such route')),
    };
  }
  const rpc = /^\/rpc\/([A-Za-z]+)$/.exec(path);
  if (method === 'POST' && rpc) {
    const chain = (rpc[1] as string).toUpperCase();
    if (chain !== 'SOLANA' && !isEvmChain(chain)) return undefined;
    return { op: 'rpc', auth: 'none', run: (_b, raw) => rpcCall(s, chain, raw) };
  }
  if (method === 'POST' && path === '/plants')
    return { op: 'plants', auth: 'bearer', run: (b, raw) => createPlant(s, raw, b) };
  return undefined;
}

async function rpcCall(s: ServiceState, chain: string, raw: string): Promise<Reply> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return {
      status: 200,
      body: { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } },
    };
  }
  const answer =
    chain === 'SOLANA'
      ? await s.solana.rpc(parsed)
      : isEvmChain(chain)
        ? await s.evm[chain].rpc(parsed)
        : null;
  return { status: 200, body: answer };
}

async function handle(ctx: HttpContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const receivedAt = Date.now();
  const s = ctx.state;
  const url = new URL(req.url ?? '/', 'http://sandbox');
  const method = req.method ?? 'GET';
  if (url.pathname.startsWith('/__admin/')) return await handleAdmin(ctx.admin, req, res, method, url);
  const r = route(s, method, url.pathname, url.searchParams);
  if (!r) {
    await readBody(req);
    return send(res, err(404, 'not_found', `no route ${method} ${url.pathname}`));
  }
  if (r.auth === 'key' || r.op === 'cctp') {
    if (s.requestLog.length >= 100_000) s.requestLog = s.requestLog.slice(-50_000);
    s.requestLog.push({ op: r.op, at: Date.now() });
  }
  const raw = await readBody(req);
  if (raw === undefined) return send(res, err(413, 'too_large', 'request body too large'));
  if (s.config.latencyMs > 0)
    await sleep(s.config.latencyMs, undefined, { signal: ctx.closing.signal }).catch(() => {});

  if (r.auth === 'key' && req.headers['x-api-key'] !== s.apiKey)
    return send(res, err(401, 'unauthorized', 'missing or invalid X-API-Key'));
  if (r.auth === 'bearer' && req.headers.authorization !== `Bearer ${s.plantsToken}`)
    return send(res, { status: 401, body: { error: 401, message: 'missing or invalid bearer token' } });

  const body = parseObject(r, method, raw);
  if ('status' in body) return send(res, body as Reply);

  const picked = pickFault(s.config, r.op, s.random);
  if (picked.script !== s.config.faultScript)
    s.config = Object.freeze({ ...s.config, faultScript: picked.script });
  const fault: FaultKind | undefined = picked.fault;
  if (await faultBeforeActing(ctx, fault, req, res)) return;

  const reply = await answer(s, r, { method, raw, body: body.value, receivedAt }, req);
  faultAfterActing(s, fault, req, res, reply);
}

/** The JSON object body of a POST (not of /rpc, which has its own parse error), or its refusal. */
function parseObject(r: Route, method: string, raw: string): { value: Record<string, unknown> } | Reply {
  if (r.op === 'rpc' || r.op === 'cctp' || method !== 'POST') return { value: {} };
  try {
    const parsed: unknown = JSON.parse(raw);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw new Error('not an object');
    return { value: parsed as Record<string, unknown> };
  } catch {
    return r.op === 'plants'
      ? { status: 400, body: { error: 400, message: 'the body must be a JSON object' } }
      : err(400, 'invalid_json', 'the body must be a JSON object');
  }
}

/** Faults that strike before the service acts; true when the request is done with. */
async function faultBeforeActing(
  ctx: HttpContext,
  fault: FaultKind | undefined,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<boolean> {
  const c = ctx.state.config;
  if (fault === 'fail_before') {
    send(res, err(c.failBeforeStatus, 'service_unavailable', 'injected failure before acting'));
    return true;
  }
  if (fault === 'rate_limit') {
    send(res, {
      ...err(429, 'rate_limited', 'too many requests'),
      headers: { 'retry-after': String(c.retryAfterSeconds) },
    });
    return true;
  }
  if (fault === 'reset_before') {
    req.socket.destroy();
    return true;
  }
  if (fault === 'hang') {
    if (c.hangMs === null) {
      ctx.hanging.add(res);
      res.on('close', () => ctx.hanging.delete(res));
      return true;
    }
    await sleep(c.hangMs, undefined, { signal: ctx.closing.signal }).catch(() => {});
    if (ctx.closing.signal.aborted) return true;
  }
  return false;
}

/**
 * Runs the operation, or replays the stored answer of an `Idempotency-Key` seen before. A request
 * whose key is still being processed (a client's re-send after its own timeout, while the first is
 * still executing on a loaded machine) waits for the first one's answer, as a service that honours
 * the key does: it never runs the same payment twice side by side.
 */
/** A request as the service acts on it: its method, raw and parsed body, and when it arrived. */
type Asked = {
  readonly method: string;
  readonly raw: string;
  readonly body: Record<string, unknown>;
  readonly receivedAt: number;
};

async function answer(s: ServiceState, r: Route, asked: Asked, req: IncomingMessage): Promise<Reply> {
  const { method, raw } = asked;
  const rawKey = req.headers['idempotency-key'];
  const idemKey = typeof rawKey === 'string' && rawKey.length > 0 ? rawKey.slice(0, 256) : null;
  const memoKey =
    s.config.idempotencyReplay && idemKey !== null && method === 'POST' && r.op !== 'rpc'
      ? `${r.op}:${idemKey}`
      : null;
  if (memoKey === null) return await runOperation(r, asked, idemKey);
  const fingerprint = createHash('sha256').update(raw).digest('hex');
  for (;;) {
    const stored = s.idempotency.get(memoKey);
    if (stored) {
      return stored.fingerprint === fingerprint
        ? stored.reply
        : err(422, 'idempotency_key_reused', 'this Idempotency-Key was used with another request');
    }
    const running = s.inFlight.get(memoKey);
    if (!running) break;
    await running;
  }
  const running = runOperation(r, asked, idemKey);
  s.inFlight.set(memoKey, running);
  try {
    const reply = await running;
    if (reply.status >= 200 && reply.status < 300) s.idempotency.set(memoKey, { fingerprint, reply });
    return reply;
  } finally {
    s.inFlight.delete(memoKey);
  }
}

/** The operation itself; a throw is the service's own 500. */
async function runOperation(r: Route, asked: Asked, idemKey: string | null): Promise<Reply> {
  let reply: Reply;
  try {
    reply = await r.run(asked.body, asked.raw, idemKey, asked.receivedAt);
  } catch (e) {
    reply = err(500, 'internal_error', e instanceof Error ? e.message.slice(0, 200) : 'internal error');
  }
  return reply;
}

/** Faults that strike after the service acted (the payment happened; the answer is lost or wrong). */
function faultAfterActing(
  s: ServiceState,
  fault: FaultKind | undefined,
  req: IncomingMessage,
  res: ServerResponse,
  reply: Reply,
): void {
  if (fault === 'fail_after')
    return send(res, err(s.config.failAfterStatus, 'internal_error', 'injected failure after acting'));
  if (fault === 'reset_after') return void req.socket.destroy();
  if (fault === 'broken_body') {
    const text = JSON.stringify(reply.body);
    const cut = text.slice(0, Math.max(1, Math.floor(text.length / 2)));
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(cut) });
    return void res.end(cut);
  }
  send(res, reply);
}
