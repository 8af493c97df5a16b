import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

/*
 * JSON-RPC over HTTP, for chain reads (EVM `eth_call`, Solana balances): credentials in the URL go
 * as Basic auth, a short timeout, and failures as short messages that never quote the URL (RPC
 * providers put keys in it). Sent with node:http on keep-alive sockets — a fraction of fetch's CPU
 * per request, and a busy worker makes one read per transfer — or through `fetch` when one is given.
 */

type PostOptions = { fetch?: typeof fetch; timeoutMs: number; fail: (message: string) => Error };

/** One JSON-RPC answer, as far as the callers look at it. */
export type JsonRpcAnswer = { id?: unknown; result?: unknown; error?: { message?: unknown } };

/** One JSON-RPC call. Returns the parsed body. */
export async function postJsonRpc(
  url: string,
  request: { method: string; params: unknown[]; id?: number },
  options: PostOptions,
): Promise<JsonRpcAnswer> {
  const body = await postJson(url, rpcRequest(request, request.id ?? 1), options);
  return (typeof body === 'object' && body !== null ? body : {}) as JsonRpcAnswer;
}

/**
 * Several JSON-RPC calls in one request (a JSON-RPC batch): the answers matched by id, in the order
 * of `requests`; undefined for a call the answer holds no object for (an endpoint that takes no
 * batches answers one error object: every call is then undefined).
 */
export async function postJsonRpcBatch(
  url: string,
  requests: readonly { method: string; params: unknown[]; id: number }[],
  options: PostOptions,
): Promise<(JsonRpcAnswer | undefined)[]> {
  const body = await postJson(
    url,
    requests.map((r) => rpcRequest(r, r.id)),
    options,
  );
  const byId = new Map<unknown, JsonRpcAnswer>();
  if (Array.isArray(body)) {
    for (const a of body as unknown[])
      if (typeof a === 'object' && a !== null) byId.set((a as JsonRpcAnswer).id, a as JsonRpcAnswer);
  }
  return requests.map((r) => byId.get(r.id));
}

function rpcRequest(r: { method: string; params: unknown[] }, id: number) {
  return { jsonrpc: '2.0', id, method: r.method, params: r.params };
}

/** POSTs `payload` as JSON: the parsed answer, or `fail` with a message that never quotes the URL. */
async function postJson(url: string, payload: unknown, options: PostOptions): Promise<unknown> {
  const target = new URL(url);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (target.username || target.password) {
    const user = decodeURIComponent(target.username);
    const pass = decodeURIComponent(target.password);
    headers['authorization'] = `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
    target.username = '';
    target.password = '';
  }
  const body = JSON.stringify(payload);
  const text = options.fetch
    ? await viaFetch(options.fetch, target, headers, body, options)
    : await viaHttp(target, headers, body, options);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw options.fail('answer is not JSON');
  }
}

async function viaFetch(
  f: typeof fetch,
  target: URL,
  headers: Record<string, string>,
  body: string,
  { fail, timeoutMs }: PostOptions,
): Promise<string> {
  let response: Response;
  try {
    response = await f(target, { method: 'POST', headers, body, signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    // The fetch error may quote the URL (with its credentials): keep only its kind.
    const name = err instanceof Error ? err.name : 'Error';
    throw fail(name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : `request failed (${name})`);
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw fail(`HTTP ${response.status}`);
  }
  try {
    return await response.text();
  } catch {
    throw fail('answer is not JSON');
  }
}

/** Idle sockets go after 4 s, before a typical server's 5 s keep-alive timeout. */
const AGENT_OPTIONS = { keepAlive: true, keepAliveMsecs: 1_000, timeout: 4_000 };
const agents = { http: new HttpAgent(AGENT_OPTIONS), https: new HttpsAgent(AGENT_OPTIONS) };

/** One POST on a keep-alive socket, the whole exchange within `timeoutMs`; the answer's text. */
function viaHttp(
  target: URL,
  headers: Record<string, string>,
  body: string,
  { fail, timeoutMs }: PostOptions,
): Promise<string> {
  const https = target.protocol === 'https:';
  return new Promise<string>((resolve, reject) => {
    const req = (https ? httpsRequest : httpRequest)(
      target,
      { method: 'POST', headers, agent: https ? agents.https : agents.http },
      (res: IncomingMessage) => {
        const status = res.statusCode ?? 0;
        if (status < 200 || status >= 300) {
          res.resume();
          done(fail(`HTTP ${status}`));
          return;
        }
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => done(undefined, text));
        res.on('error', () => done(fail('answer is not JSON')));
      },
    );
    const timer = setTimeout(() => {
      done(fail(`no answer within ${timeoutMs} ms`));
      req.destroy();
    }, timeoutMs);
    let settled = false;
    function done(err: Error | undefined, text?: string): void {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(text as string);
    }
    // The socket's error may quote the host: keep only its kind.
    req.on('error', (err: Error & { code?: string }) =>
      done(fail(`request failed (${err.code ?? err.name})`)),
    );
    req.end(body);
  });
}
