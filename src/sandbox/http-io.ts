import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Reply } from './service-state.ts';

const MAX_BODY = 1_000_000;

export function send(res: ServerResponse, reply: Reply): void {
  if (res.destroyed || res.headersSent) return;
  const text = JSON.stringify(reply.body);
  res.writeHead(reply.status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...reply.headers,
  });
  res.end(text);
}

export async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
