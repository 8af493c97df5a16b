import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A JSON-RPC proxy in front of a real node (anvil) that sees every `eth_sendRawTransaction` before
 * the node does: `beforeSend` runs first (a test checks Redis there: was the transaction saved?), and
 * with `dropSends` the transaction never reaches the node and the connection is cut (a sender that
 * crashed right after saving, or a broadcast whose answer is lost).
 */
export type RpcRecorder = {
  readonly url: string;
  /** Every raw transaction sent through, in order, and whether it reached the node. */
  readonly sends: { readonly raw: string; readonly forwarded: boolean }[];
  beforeSend: ((raw: string) => Promise<void>) | undefined;
  dropSends: boolean;
  close(): Promise<void>;
};

type RpcRequest = { readonly method?: string; readonly params?: readonly unknown[] };

async function forward(target: string, body: string): Promise<string> {
  const res = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return await res.text();
}

export async function startRpcRecorder(target: string): Promise<RpcRecorder> {
  const rec: RpcRecorder = {
    url: '',
    sends: [],
    beforeSend: undefined,
    dropSends: false,
    close: async () => {},
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks).toString();
        const parsed = JSON.parse(body) as RpcRequest | RpcRequest[];
        const calls = Array.isArray(parsed) ? parsed : [parsed];
        for (const call of calls) {
          if (call.method !== 'eth_sendRawTransaction') continue;
          const raw = String(call.params?.[0]);
          await rec.beforeSend?.(raw);
          rec.sends.push({ raw, forwarded: !rec.dropSends });
          if (rec.dropSends) {
            req.socket.destroy();
            return;
          }
        }
        const answer = await forward(target, body);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(answer);
      })().catch((err: unknown) => {
        res.writeHead(500);
        res.end(String(err));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(rec, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
