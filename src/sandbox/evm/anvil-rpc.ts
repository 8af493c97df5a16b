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

/** One JSON-RPC call to a local anvil; throws AnvilRpcError for an error answer. */
export async function anvilCall<T = unknown>(
  url: string,
  method: string,
  params: unknown[] = [],
): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++nextId, method, params }),
    signal: AbortSignal.timeout(30_000),
  });
  const body = (await res.json()) as {
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
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(request),
    signal: AbortSignal.timeout(30_000),
  });
  return await res.json();
}
