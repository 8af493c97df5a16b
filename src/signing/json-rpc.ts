/**
 * One JSON-RPC call over fetch, for chain reads (EVM `eth_call`, Solana balances): credentials in
 * the URL go as Basic auth (fetch refuses them in the URL), a short timeout, and failures as short
 * messages that never quote the URL (RPC providers put keys in it). Returns the parsed body.
 */
export async function postJsonRpc(
  url: string,
  request: { method: string; params: unknown[]; id?: number },
  options: { fetch?: typeof fetch; timeoutMs: number; fail: (message: string) => Error },
): Promise<{ result?: unknown; error?: { message?: unknown } }> {
  const { fail, timeoutMs } = options;
  const target = new URL(url);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (target.username || target.password) {
    const user = decodeURIComponent(target.username);
    const pass = decodeURIComponent(target.password);
    headers['authorization'] = `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
    target.username = '';
    target.password = '';
  }
  let response: Response;
  try {
    response = await (options.fetch ?? globalThis.fetch)(target, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: request.id ?? 1,
        method: request.method,
        params: request.params,
      }),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    // The fetch error may quote the URL (with its credentials): keep only its kind.
    const name = err instanceof Error ? err.name : 'Error';
    throw fail(name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : `request failed (${name})`);
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw fail(`HTTP ${response.status}`);
  }
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    throw fail('answer is not JSON');
  }
  return (typeof body === 'object' && body !== null ? body : {}) as {
    result?: unknown;
    error?: { message?: unknown };
  };
}
