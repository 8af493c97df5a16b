import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of Redis that can lose one reply the way a crash does: the command reaches
 * Redis and is applied, then the connection drops before its answer reaches the client. A client
 * that re-sends unanswered commands on reconnect (ioredis does) then runs the command a second
 * time. That is the fault a Redis restart (or a network cut) causes at the worst moment, made
 * exact and repeatable.
 */
export type ReplyCutter = {
  readonly url: string;
  /**
   * The next client write whose text contains every one of `needles` goes to Redis; whatever
   * Redis answers to that connection next is thrown away and both sides are closed. Resolves when
   * it has happened.
   */
  cutReplyTo(...needles: string[]): Promise<void>;
  /** Connections cut so far. */
  cuts(): number;
  close(): Promise<void>;
};

export async function startReplyCutter(redisPort: number): Promise<ReplyCutter> {
  const sockets = new Set<Socket>();
  let armed: { needles: string[]; done: () => void } | undefined;
  let cuts = 0;

  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port: redisPort });
    sockets.add(client);
    sockets.add(upstream);
    let dropNextReply: (() => void) | undefined;
    const closeBoth = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', () => {
      sockets.delete(client);
      upstream.destroy();
    });
    upstream.on('close', () => {
      sockets.delete(upstream);
      client.destroy();
    });
    client.on('error', closeBoth);
    upstream.on('error', closeBoth);
    client.on('data', (chunk: Buffer) => {
      const trap = armed;
      if (trap && !dropNextReply) {
        const text = chunk.toString('latin1');
        if (trap.needles.every((n) => text.includes(n))) {
          armed = undefined;
          dropNextReply = trap.done;
        }
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (dropNextReply) {
        // Redis has answered, so it has applied the command: lose the answer and the connection.
        const done = dropNextReply;
        cuts++;
        closeBoth();
        done();
        return;
      }
      client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || !address) throw new Error('proxy has no port');

  return {
    url: `redis://127.0.0.1:${address.port}`,
    cutReplyTo(...needles) {
      return new Promise<void>((resolve) => {
        armed = { needles, done: resolve };
      });
    },
    cuts: () => cuts,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
