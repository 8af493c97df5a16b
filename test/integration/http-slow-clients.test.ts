import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/cli.ts';
import { redisForSuite } from '../helpers/redis.ts';
import { startServe, type ServeProcess } from '../helpers/serve.ts';
import { newPrefix } from './ingest-fixtures.ts';

const TOKEN = 'hook-token-slow-clients-0123456789';

/** How a test client misbehaves. */
type Kind =
  /** connects and sends nothing */
  | 'silent'
  /** sends a request line, then one header byte at a time */
  | 'slow-headers'
  /** sends complete headers without the token, then the body one byte at a time */
  | 'slow-body-no-token'
  /** the same with the token: the request deadline, not the refusal, has to end it */
  | 'slow-body-token'
  /** makes one request, then keeps the connection open and idle */
  | 'idle-keep-alive';

type SlowClient = {
  readonly kind: Kind;
  readonly socket: Socket;
  /** Resolves with the time the server closed the connection (we never close it first). */
  readonly closed: Promise<number>;
  /** What the server sent before closing. */
  received(): string;
};

const TRICKLE_MS = 400;

/** Opens one misbehaving client against 127.0.0.1:`port`; it keeps trickling until the server closes it. */
async function openSlowClient(port: number, kind: Kind): Promise<SlowClient> {
  const socket = connect({ host: '127.0.0.1', port });
  socket.setNoDelay(true);
  let data = '';
  socket.on('data', (d: Buffer) => (data += d.toString('latin1')));
  // Writes after the server's close fail with EPIPE/ECONNRESET: expected, and not a test failure.
  socket.on('error', () => {});
  const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now())));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const head = (auth: boolean) =>
    'POST /v1/batches HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/csv\r\n' +
    `${auth ? `Authorization: Bearer ${TOKEN}\r\n` : ''}Content-Length: 100000\r\n\r\n`;
  const trickle = (byte: string) => {
    const timer = setInterval(() => {
      if (!socket.destroyed && socket.writable) socket.write(byte);
    }, TRICKLE_MS);
    void closed.then(() => clearInterval(timer));
  };
  switch (kind) {
    case 'silent':
      break;
    case 'slow-headers':
      socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
      trickle('a');
      break;
    case 'slow-body-no-token':
      socket.write(head(false));
      trickle('x');
      break;
    case 'slow-body-token':
      socket.write(head(true));
      trickle('x');
      break;
    case 'idle-keep-alive':
      socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n');
      break;
  }
  return { kind, socket, closed, received: () => data };
}

/** One GET /healthz on a fresh connection: its status (0 when it got no answer). */
async function healthz(url: string): Promise<{ status: number }> {
  try {
    const res = await fetch(`${url}/healthz`, {
      headers: { connection: 'close' },
      signal: AbortSignal.timeout(5_000),
    });
    await res.arrayBuffer();
    return { status: res.status };
  } catch {
    return { status: 0 };
  }
}

let suite: Awaited<ReturnType<typeof redisForSuite>>;
beforeAll(async () => {
  suite = await redisForSuite();
});
afterAll(async () => {
  await suite?.close();
});

/**
 * Finding 2 of issue 19: connections sending a body one byte every 2 s stayed open past 100 s and,
 * in numbers, made /healthz fail. The server must close slow and idle connections by itself.
 */
describe('usdc-batch serve closes slow and idle connections', () => {
  let api: ServeProcess;
  const HEADERS_MS = 2_000;
  const REQUEST_MS = 4_000;
  const IDLE_MS = 1_000;

  beforeAll(async () => {
    api = await startServe({
      REDIS_URL: suite.url,
      QUEUE_PREFIX: newPrefix(),
      HOOK_TOKEN: TOKEN,
      HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
      HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_MS),
      HTTP_IDLE_TIMEOUT_MS: String(IDLE_MS),
      // Hundreds of refused clients from one address: the 429 after repeated failures would answer
      // some of them (and the authenticated slow bodies) before their own limits are reached.
      HTTP_AUTH_FAILURE_LIMIT: '0',
    });
  });
  afterAll(async () => {
    await api?.stop();
  });

  it('listens on loopback by default (HTTP_HOST unset) and prints the address it is bound to', () => {
    expect(api.process.output()).toContain(`listening on ${api.url}\n`);
  });

  it('closes a few hundred slow connections itself while /healthz keeps answering', async () => {
    const port = Number(new URL(api.url).port);
    const kinds: Kind[] = [
      'silent',
      'slow-headers',
      'slow-body-no-token',
      'slow-body-token',
      'idle-keep-alive',
    ];
    const PER_KIND = 60;
    const clients: SlowClient[] = [];
    const opened = Date.now();
    try {
      for (let i = 0; i < PER_KIND; i++) {
        clients.push(...(await Promise.all(kinds.map((kind) => openSlowClient(port, kind)))));
      }
      expect(clients).toHaveLength(300);

      // /healthz, polled on fresh connections while the slow ones are open, until all are closed.
      const checks: { status: number }[] = [];
      let allClosed = false;
      const everyClosed = Promise.all(clients.map((c) => c.closed)).then((times) => {
        allClosed = true;
        return times;
      });
      const poll = (async () => {
        while (!allClosed) {
          checks.push(await healthz(api.url));
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      // Every deadline plus the checking interval, with room for a loaded machine; well under the
      // minute after which Node's own defaults would have closed some of them.
      const bound = REQUEST_MS + 8_000;
      const outcome = await Promise.race([
        everyClosed,
        new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), bound)),
      ]);
      allClosed = true;
      await poll;
      const open = clients.filter((c) => !c.socket.destroyed).map((c) => c.kind);
      expect(outcome === 'timeout' ? open : [], 'connections the server left open').toEqual([]);

      const closedAfter = async (kind: Kind) =>
        Math.max(...(await Promise.all(clients.filter((c) => c.kind === kind).map((c) => c.closed)))) -
        opened;
      // A refusal answers 401 and closes its connection without waiting for the body (a few bytes of
      // its 100,000 came); how soon after its headers: `BENCH_ONLY=responsiveness`.
      for (const c of clients.filter((x) => x.kind === 'slow-body-no-token')) {
        expect(c.received()).toMatch(/^HTTP\/1\.1 401 /);
        expect(c.received()).toMatch(/\r\nconnection: close\r\n/i);
      }
      // The authenticated slow body is cut at the request deadline (408), not before the headers one.
      for (const c of clients.filter((x) => x.kind === 'slow-body-token')) {
        expect(c.received()).toMatch(/^HTTP\/1\.1 408 /);
      }
      expect(await closedAfter('slow-body-token')).toBeGreaterThanOrEqual(REQUEST_MS - 500);
      for (const c of clients.filter((x) => x.kind === 'idle-keep-alive')) {
        expect(c.received()).toMatch(/^HTTP\/1\.1 200 /);
      }

      // /healthz answered every time it was asked while the slow ones were open (its latency is
      // measured by the bench, `BENCH_ONLY=responsiveness`).
      expect(checks.length).toBeGreaterThan(5);
      expect(checks.filter((c) => c.status !== 200)).toEqual([]);
    } finally {
      for (const c of clients) c.socket.destroy();
    }
  });
});

describe('HTTP_MAX_CONNECTIONS', () => {
  let api: ServeProcess;
  const MAX = 20;

  beforeAll(async () => {
    api = await startServe({
      REDIS_URL: suite.url,
      QUEUE_PREFIX: newPrefix(),
      HOOK_TOKEN: TOKEN,
      HTTP_MAX_CONNECTIONS: String(MAX),
      HTTP_IDLE_TIMEOUT_MS: '60000',
    });
  });
  afterAll(async () => {
    await api?.stop();
  });

  it('closes a connection beyond the cap on arrival, and serves again once one is freed', async () => {
    const port = Number(new URL(api.url).port);
    // Each holder has had an answer, so the server has accepted (and counts) its connection.
    const holders = await Promise.all(
      Array.from({ length: MAX }, () => openSlowClient(port, 'idle-keep-alive')),
    );
    try {
      await waitFor('every holder to get its answer', async () =>
        holders.every((h) => h.received().includes('\r\n\r\n')),
      );
      const extra = await openSlowClient(port, 'idle-keep-alive');
      // Closed on arrival, not by the 60 s idle timeout: half of that tells them apart, and leaves
      // a busy machine room.
      const cut = await Promise.race([
        extra.closed.then(() => 'closed'),
        new Promise((r) => setTimeout(() => r('still open'), 30_000)),
      ]);
      expect(cut).toBe('closed');
      expect(extra.received()).toBe('');
      expect(holders.filter((h) => h.socket.destroyed)).toEqual([]);

      holders.pop()?.socket.destroy();
      const after = await waitFor(
        'a freed connection to be served',
        async () => {
          const r = await healthz(api.url);
          return r.status === 200 ? r : undefined;
        },
        { timeoutMs: 10_000, intervalMs: 100 },
      );
      expect(after.status).toBe(200);
    } finally {
      for (const h of holders) h.socket.destroy();
    }
  });
});
