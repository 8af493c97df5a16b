import { connect, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { splitRuntimeDump } from '../../src/domain/runtime-dump.ts';
import { createRateLimiter } from '../../src/store/rate-limiter.ts';
import { startPrivateRedis } from '../../support/redis.ts';
import { startServe, type ServeProcess } from '../../support/serve.ts';
import { onCleanup, trackChild } from '../lib/cleanup.ts';

/**
 * 9. How fast the guards answer — the speed figures the tests do not time (they check what happens;
 * the bench says how quickly):
 * - the API_RATE_LIMIT limiter at 8/s over two connections: how soon the first eight go, and how
 *   far apart (on the client's clock) each admission is from the one eight before it;
 * - `serve` refusing hostile input (a JSON recipient of 150,000 characters, eight CSV recipients of
 *   64 KB): how long the refusal takes and the slowest /healthz answer meanwhile;
 * - `serve` with 300 slow or idle connections (60 each: silent, headers one byte at a time, a body one
 *   byte at a time with and without the token, idle keep-alive): /healthz latency until the server
 *   has closed them all, and how long after its headers a refused slow body is closed;
 * - reading a hostile Solana runtime dump (an opening `(` repeated 200,000 and 400,000 times) into
 *   the error it names (splitRuntimeDump): how long each takes, twice the text about twice the time
 *   (test/unit/runtime-dump.test.ts checks what it reads).
 */
export type ResponsivenessResult = {
  readonly limiter: readonly { readonly firstEightMs: number; readonly minSpacingMs: number }[];
  readonly hostile: readonly {
    readonly jsonRefusalMs: number;
    readonly jsonWorstHealthzMs: number;
    readonly csvRefusalMs: number;
    readonly csvWorstHealthzMs: number;
  }[];
  readonly slowClients: readonly {
    readonly healthzP95Ms: number;
    readonly healthzMaxMs: number;
    readonly healthzChecks: number;
    readonly refusedClosedAfterMs: number;
    readonly allClosedAfterMs: number;
  }[];
  /** Absent from results recorded before it was measured. */
  readonly runtimeDump?: readonly { readonly ms200k: number; readonly ms400k: number }[];
};

const TOKEN = 'bench-responsiveness-token-0123456789';

/** 16 takes at 8/s over two connections; admission times on this process's clock. */
async function limiterRun(url: string, prefix: string): Promise<ResultOf<'limiter'>> {
  const a = new Redis(url);
  const b = new Redis(url);
  try {
    const limiters = [a, b].map((redis) => createRateLimiter({ redis, prefix, perSecond: 8 }));
    const started = performance.now();
    const at: number[] = [];
    await Promise.all(
      Array.from({ length: 16 }, async (_, i) => {
        await limiters[i % 2]!.take();
        at.push(performance.now() - started);
      }),
    );
    at.sort((x, y) => x - y);
    const spacing = at.slice(8).map((t, i) => t - at[i]!);
    return { firstEightMs: at[7]!, minSpacingMs: Math.min(...spacing) };
  } finally {
    a.disconnect();
    b.disconnect();
  }
}
type ResultOf<K extends keyof ResponsivenessResult> = NonNullable<ResponsivenessResult[K]>[number];

/** splitRuntimeDump over a hostile text of `n` opening brackets, the fastest of three (ms). */
function hostileDumpMs(n: number): number {
  const text = `FailedTransactionMetadata { err: ${'('.repeat(n)}`;
  let best = Infinity;
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    if (splitRuntimeDump(text).text.length >= 200) throw new Error('the hostile dump was not cut');
    best = Math.min(best, performance.now() - t0);
  }
  return best;
}

/** Runs `during` while /healthz is asked again and again; the slowest answer meanwhile. */
async function withHealthz<T>(
  api: ServeProcess,
  during: () => Promise<T>,
): Promise<{ result: T; worstMs: number }> {
  let done = false;
  let worst = 0;
  const probe = (async () => {
    while (!done) {
      const t0 = performance.now();
      const res = await fetch(`${api.url}/healthz`, { signal: AbortSignal.timeout(20_000) });
      await res.arrayBuffer();
      worst = Math.max(worst, performance.now() - t0);
    }
  })();
  try {
    return { result: await during(), worstMs: worst };
  } finally {
    done = true;
    await probe;
  }
}

async function timedPost(api: ServeProcess, contentType: string, body: string): Promise<number> {
  const t0 = performance.now();
  const res = await api.call('/v1/batches', {
    method: 'POST',
    token: TOKEN,
    headers: { 'content-type': contentType },
    body,
  });
  await res.text();
  if (res.status < 400) throw new Error(`hostile input was accepted (HTTP ${res.status})`);
  return performance.now() - t0;
}

async function hostileRun(api: ServeProcess): Promise<ResultOf<'hostile'>> {
  const json = JSON.stringify({
    transfers: [{ from: 'BASE', to: 'BASE', amount: '1.00', recipient: '2'.repeat(150_000) }],
  });
  const long = '2'.repeat(64 * 1024 - 100);
  const csv = `from,to,amount,recipient\n${Array.from({ length: 8 }, () => `BASE,BASE,1.00,${long}`).join('\n')}\n`;
  const j = await withHealthz(api, () => timedPost(api, 'application/json', json));
  const c = await withHealthz(api, () => timedPost(api, 'text/csv', csv));
  return {
    jsonRefusalMs: j.result,
    jsonWorstHealthzMs: j.worstMs,
    csvRefusalMs: c.result,
    csvWorstHealthzMs: c.worstMs,
  };
}

type Kind = 'silent' | 'slow-headers' | 'slow-body-no-token' | 'slow-body-token' | 'idle-keep-alive';
const KINDS: readonly Kind[] = [
  'silent',
  'slow-headers',
  'slow-body-no-token',
  'slow-body-token',
  'idle-keep-alive',
];

/** One misbehaving client; it trickles a byte every 400 ms until the server closes it. */
async function slowClient(
  port: number,
  kind: Kind,
): Promise<{ kind: Kind; socket: Socket; openedAt: number; closed: Promise<number> }> {
  const socket = connect({ host: '127.0.0.1', port });
  socket.on('error', () => {});
  // Read what the server answers (and so see its close: a paused socket never ends).
  socket.resume();
  const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(performance.now())));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const head = (auth: boolean) =>
    'POST /v1/batches HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/csv\r\n' +
    `${auth ? `Authorization: Bearer ${TOKEN}\r\n` : ''}Content-Length: 100000\r\n\r\n`;
  const trickle = (byte: string) => {
    const timer = setInterval(() => socket.writable && socket.write(byte), 400);
    void closed.then(() => clearInterval(timer));
  };
  if (kind === 'slow-headers') {
    socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
    trickle('a');
  } else if (kind === 'slow-body-no-token' || kind === 'slow-body-token') {
    socket.write(head(kind === 'slow-body-token'));
    trickle('x');
  } else if (kind === 'idle-keep-alive') {
    socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n');
  }
  return { kind, socket, openedAt: performance.now(), closed };
}

async function slowClientsRun(api: ServeProcess): Promise<ResultOf<'slowClients'>> {
  const port = Number(new URL(api.url).port);
  const opened = performance.now();
  const clients: Awaited<ReturnType<typeof slowClient>>[] = [];
  try {
    for (let i = 0; i < 60; i++) clients.push(...(await Promise.all(KINDS.map((k) => slowClient(port, k)))));
    let allClosed = false;
    const everyClosed = Promise.all(clients.map((c) => c.closed)).then((t) => ((allClosed = true), t));
    const latencies: number[] = [];
    const poll = (async () => {
      while (!allClosed) {
        const t0 = performance.now();
        const res = await fetch(`${api.url}/healthz`, {
          headers: { connection: 'close' },
          signal: AbortSignal.timeout(10_000),
        });
        await res.arrayBuffer();
        latencies.push(performance.now() - t0);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    // Bounded: a server that left connections open fails the section instead of hanging the bench.
    let bound: NodeJS.Timeout | undefined;
    const closedAt = await Promise.race([
      everyClosed,
      new Promise<never>((_, reject) => {
        bound = setTimeout(() => {
          allClosed = true;
          const open = clients.filter((c) => !c.socket.destroyed).map((c) => c.kind);
          reject(
            new Error(`the server left ${open.length} connections open: ${[...new Set(open)].join(', ')}`),
          );
        }, 60_000);
      }),
    ]).finally(() => clearTimeout(bound));
    await poll;
    const refused = clients.filter((c) => c.kind === 'slow-body-no-token');
    const refusedAfter = await Promise.all(refused.map(async (c) => (await c.closed) - c.openedAt));
    latencies.sort((x, y) => x - y);
    return {
      healthzP95Ms: latencies[Math.floor(latencies.length * 0.95)] ?? Number.NaN,
      healthzMaxMs: latencies.at(-1) ?? Number.NaN,
      healthzChecks: latencies.length,
      refusedClosedAfterMs: Math.max(...refusedAfter),
      allClosedAfterMs: Math.max(...closedAt) - opened,
    };
  } finally {
    for (const c of clients) c.socket.destroy();
  }
}

export async function benchResponsiveness(p: {
  runs: number;
  log: (s: string) => void;
}): Promise<ResponsivenessResult> {
  const redis = await startPrivateRedis({ durable: false });
  const stopRedis = onCleanup(() => redis.stop());
  const limiter: ResultOf<'limiter'>[] = [];
  const hostile: ResultOf<'hostile'>[] = [];
  const slowClients: ResultOf<'slowClients'>[] = [];
  const runtimeDump: ResultOf<'runtimeDump'>[] = [];
  for (let i = 0; i < p.runs; i++) {
    const r = { ms200k: hostileDumpMs(200_000), ms400k: hostileDumpMs(400_000) };
    runtimeDump.push(r);
    p.log(
      `runtime dump run ${i + 1}: 200,000 in ${r.ms200k.toFixed(1)} ms, 400,000 in ${r.ms400k.toFixed(1)} ms`,
    );
  }
  try {
    for (let i = 0; i < p.runs; i++) {
      const r = await limiterRun(redis.url, `bench-rl-${i}`);
      limiter.push(r);
      p.log(
        `limiter run ${i + 1}: first 8 in ${r.firstEightMs.toFixed(0)} ms, spacing ≥ ${r.minSpacingMs.toFixed(0)} ms`,
      );
    }
    const env = { REDIS_URL: redis.url, QUEUE_PREFIX: 'bench-http', HOOK_TOKEN: TOKEN };
    const api = await startServe(env);
    trackChild(api.process.child);
    try {
      // The first requests load and compile code: warm up before measuring.
      await api.call('/healthz');
      await timedPost(
        api,
        'text/csv',
        `from,to,amount,recipient\n${`DOGE,BASE,1,${'x'.repeat(1000)}\n`.repeat(1000)}`,
      );
      for (let i = 0; i < p.runs; i++) {
        const r = await hostileRun(api);
        hostile.push(r);
        p.log(
          `hostile run ${i + 1}: JSON refused in ${r.jsonRefusalMs.toFixed(0)} ms, CSV in ${r.csvRefusalMs.toFixed(0)} ms`,
        );
      }
    } finally {
      await api.stop();
    }
    const slow = await startServe({
      ...env,
      HTTP_HEADERS_TIMEOUT_MS: '2000',
      HTTP_REQUEST_TIMEOUT_MS: '4000',
      HTTP_IDLE_TIMEOUT_MS: '1000',
      HTTP_AUTH_FAILURE_LIMIT: '0',
    });
    trackChild(slow.process.child);
    try {
      for (let i = 0; i < p.runs; i++) {
        const r = await slowClientsRun(slow);
        slowClients.push(r);
        p.log(
          `slow clients run ${i + 1}: /healthz p95 ${r.healthzP95Ms.toFixed(0)} ms, max ${r.healthzMaxMs.toFixed(0)} ms`,
        );
      }
    } finally {
      await slow.stop();
    }
  } finally {
    await stopRedis();
  }
  return { limiter, hostile, slowClients, runtimeDump };
}
