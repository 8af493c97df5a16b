import { Agent as HttpAgent, request as httpRequest } from 'node:http';

/** A JSON-RPC error anvil answered (`data` carries a revert's encoded error). */
export class AnvilRpcError extends Error {
  override name = 'AnvilRpcError';
  readonly code: number;
  readonly data: unknown;
  constructor(code: number, message: string, data: unknown) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

let nextId = 0;

/** Sockets to the local anvils kept open between calls: fetch costs several times node:http's CPU. */
const agent = new HttpAgent({ keepAlive: true, keepAliveMsecs: 1_000, timeout: 4_000 });
const ANVIL_TIMEOUT_MS = 30_000;

/** POSTs a JSON-RPC body to a local anvil; its parsed answer. */
function postAnvil(url: string, payload: unknown): Promise<unknown> {
  const body = JSON.stringify(payload);
  return new Promise<unknown>((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
        signal: AbortSignal.timeout(ANVIL_TIMEOUT_MS),
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('error', reject);
        res.on('end', () => {
          try {
            resolve(JSON.parse(text) as unknown);
          } catch (e) {
            reject(e instanceof Error ? e : new Error(String(e)));
          }
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** One JSON-RPC call to a local anvil; throws AnvilRpcError for an error answer. */
export async function anvilCall<T = unknown>(
  url: string,
  method: string,
  params: unknown[] = [],
): Promise<T> {
  const body = (await postAnvil(url, { jsonrpc: '2.0', id: ++nextId, method, params })) as {
    result?: T;
    error?: { code?: number; message?: string; data?: unknown };
  };
  if (body.error) {
    throw new AnvilRpcError(
      body.error.code ?? -32000,
      String(body.error.message ?? 'error'),
      body.error.data,
    );
  }
  return body.result as T;
}

/** Forwards a raw JSON-RPC request object as it is and returns anvil's answer object. */
export async function anvilForward(url: string, request: unknown): Promise<unknown> {
  return await postAnvil(url, request);
}
