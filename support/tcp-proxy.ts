import { connect, createServer, type Server, type Socket } from 'node:net';
import { freePort } from './redis.ts';

/**
 * A TCP proxy on a loopback port, for fault tests: an endpoint that can be pointed at another
 * server (a managed service's endpoint moving to a promoted replica), and a link that can stop
 * forwarding (bytes read and dropped, both sockets kept open: a partition neither side sees) or
 * close (both sockets closed, new connections refused until it is mended).
 */
export type TcpProxy = {
  readonly port: number;
  /** Where new connections go; existing ones are closed (as a moved endpoint's are). */
  pointAt(targetPort: number): void;
  /** Stops forwarding in both directions; what arrives meanwhile is dropped, never delivered. */
  cut(): void;
  /** Closes every connection and refuses new ones. */
  close(): void;
  /** Forwards again (new connections; a cut connection stays dead: its bytes were dropped). */
  mend(): void;
  /** Bytes dropped while cut. */
  readonly dropped: number;
  stop(): Promise<void>;
};

type Pair = { readonly client: Socket; readonly upstream: Socket };

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  let target = targetPort;
  let mode: 'forward' | 'cut' | 'closed' = 'forward';
  let dropped = 0;
  const pairs = new Set<Pair>();
  const server: Server = createServer((client) => {
    if (mode === 'closed') {
      client.destroy();
      return;
    }
    const upstream = connect({ port: target, host: '127.0.0.1' });
    const pair = { client, upstream };
    pairs.add(pair);
    const forward = (to: Socket) => (chunk: Buffer) => {
      if (mode === 'forward') to.write(chunk);
      else dropped += chunk.length;
    };
    client.on('data', forward(upstream));
    upstream.on('data', forward(client));
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  const port = await listen(server);
  const closeAll = () => {
    for (const p of pairs) {
      p.client.destroy();
      p.upstream.destroy();
    }
    pairs.clear();
  };
  return {
    port,
    pointAt(next) {
      target = next;
      closeAll();
    },
    cut() {
      mode = 'cut';
    },
    close() {
      mode = 'closed';
      closeAll();
    },
    mend() {
      // A cut connection lost bytes in the middle of a stream: it cannot carry on.
      if (mode === 'cut') closeAll();
      mode = 'forward';
    },
    get dropped() {
      return dropped;
    },
    async stop() {
      mode = 'closed';
      closeAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function listen(server: Server): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => {
          server.off('error', reject);
          resolve();
        });
      });
      return port;
    } catch (err) {
      if (attempt >= 3) throw err;
    }
  }
}
