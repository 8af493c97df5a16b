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
  const body = (await postAnvil(url, { jsonrpc: '2.0', id: ++nextId, method, params })) as RpcAnswerBody;
  if (body.error) throw rpcError(body.error);
  return body.result as T;
}

/** One call's answer in a batch: its result, or the error anvil answered for it. */
export type AnvilAnswer<T = unknown> =
  { readonly ok: true; readonly result: T } | { readonly ok: false; readonly error: AnvilRpcError };

/**
 * Several calls to a local anvil in one JSON-RPC batch request (one round of HTTP); their answers in
 * the calls' order. Anvil runs a batch's calls concurrently: only calls that do not depend on each
 * other go together (reads of one state, say).
 */
export async function anvilCalls(
  url: string,
  calls: readonly (readonly [method: string, params: unknown[]])[],
): Promise<AnvilAnswer[]> {
  const first = nextId + 1;
  nextId += calls.length;
  const body = calls.map(([method, params], i) => ({ jsonrpc: '2.0', id: first + i, method, params }));
  const answers = await postAnvil(url, body);
  if (!Array.isArray(answers)) throw new Error('anvil answered a batch with no array');
  const byId = new Map<unknown, RpcAnswerBody>(answers.map((a: RpcAnswerBody) => [a.id, a]));
  return calls.map((_, i) => {
    const a = byId.get(first + i);
    if (!a) return { ok: false, error: new AnvilRpcError(-32603, 'no answer in the batch', undefined) };
    return a.error ? { ok: false, error: rpcError(a.error) } : { ok: true, result: a.result };
  });
}

type RpcAnswerBody = {
  id?: unknown;
  result?: unknown;
  error?: { code?: number; message?: string; data?: unknown };
};

function rpcError(e: NonNullable<RpcAnswerBody['error']>): AnvilRpcError {
  return new AnvilRpcError(e.code ?? -32000, String(e.message ?? 'error'), e.data);
}

/** Forwards a raw JSON-RPC request object as it is and returns anvil's answer object. */
export async function anvilForward(url: string, request: unknown): Promise<unknown> {
  return await postAnvil(url, request);
}
