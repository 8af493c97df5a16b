import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { connect, createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { Redis } from 'ioredis';

/**
 * Redis for tests, in this order: `REDIS_URL` when set; otherwise a private `redis-server` from PATH
 * on a free loopback port in a temp dir; otherwise a `redis` container through testcontainers when
 * a Docker engine answers; otherwise a clear error saying how to get one. Private servers are
 * durable by default (`appendonly yes`, `appendfsync always`), as the worker requires, and
 * restartable on the same port and data for fault tests.
 */

export const REDIS_IMAGE = 'redis:7.4';

/**
 * A port free on 127.0.0.1 now, for a server a test starts next. It is drawn below the kernel's
 * ephemeral range (`ip_local_port_range`): the kernel hands ports of that range to every `listen(0)`
 * and every outgoing connection of the machine, so one it gave here could be taken by another test
 * lane's client before the server binds it (seen: `HTTP_PORT: port 33559 … already in use`). Below
 * it, only a server asking for that very port competes.
 */
export async function freePort(): Promise<number> {
  const low = (ephemeralStart ??= ephemeralLow());
  for (let attempt = 0; low > FIRST_PORT + 1000 && attempt < 50; attempt++) {
    const port = FIRST_PORT + Math.floor(Math.random() * (low - FIRST_PORT));
    if ((await listenOn(port)) !== undefined) return port;
  }
  const port = await listenOn(0);
  if (port === undefined) throw new Error('no free port on 127.0.0.1');
  return port;
}

/** Ports below this are left to the machine's own services. */
const FIRST_PORT = 10_000;

/** `ephemeralLow()`, read on the first `freePort` of the process. */
let ephemeralStart: number | undefined;

/** The first port of the kernel's ephemeral range (Linux's default where it cannot be read). */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/)[0]);
    return Number.isInteger(low) && low > 0 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/** Listens on `port` of 127.0.0.1 (0: one the kernel picks) and closes: the port, or undefined if taken. */
async function listenOn(port: number): Promise<number | undefined> {
  return await new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(undefined));
    srv.listen(port, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === 'object' && addr ? addr.port : undefined));
    });
  });
}

export type TestRedis = {
  readonly url: string;
  readonly port: number;
  /** `process`: a redis-server child of this test process; `container`: a testcontainers container. */
  readonly kind: 'process' | 'container';
  /** The data dir of a `process` server (removed by `stop`); undefined for a container. */
  readonly dir: string | undefined;
  /** The PID of a `process` server while it runs (the bench reads its CPU); undefined for a container. */
  readonly pid?: number | undefined;
  /**
   * Kills the server (SIGKILL: a crash, not a shutdown) and starts it again on the same port and
   * data, so a durable server replays its AOF. `downMs` keeps it down that long in between.
   */
  restart(options?: { downMs?: number }): Promise<void>;
  /** Kills the server and removes its data. Safe to call twice. */
  stop(): Promise<void>;
  /** Kills the server (SIGKILL) and keeps its data, for a later `startAgain`. */
  stopProcessOnly(): Promise<void>;
  startAgain(): Promise<void>;
};

export type PrivateRedisOptions = {
  /** `appendonly yes` + `appendfsync always` (default true); false gives a server that loses data on a crash. */
  durable?: boolean;
  /** More `redis-server` arguments, e.g. `['--rename-command', 'CONFIG', '']`. */
  extraArgs?: readonly string[];
};

function serverArgs(durable: boolean, extraArgs: readonly string[] = []): string[] {
  return [
    '--save',
    '',
    '--appendonly',
    durable ? 'yes' : 'no',
    '--appendfsync',
    durable ? 'always' : 'everysec',
    '--maxmemory-policy',
    'noeviction',
    '--loglevel',
    'warning',
    ...extraArgs,
  ];
}

/** Resolves once `PING` answers `PONG` (not `LOADING` while an AOF replays), or rejects at the deadline. */
async function waitForPong(port: number, host: string, timeoutMs: number, alive?: () => string | undefined) {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    const dead = alive?.();
    if (dead !== undefined) throw new Error(dead);
    const answer = await new Promise<string>((resolve) => {
      const socket = connect({ port, host });
      let data = '';
      const done = (result: string) => {
        socket.destroy();
        resolve(result);
      };
      socket.setTimeout(1_000, () => done('timeout'));
      socket.once('error', (err) => done(err.message));
      socket.once('connect', () => socket.write('PING\r\n'));
      socket.on('data', (chunk) => {
        data += chunk.toString('latin1');
        if (data.includes('\r\n')) done(data.trim());
      });
    });
    if (answer === '+PONG') return;
    last = answer;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`redis on ${host}:${port} did not answer PING within ${timeoutMs} ms (last: ${last})`);
}

/** The redis-server executable on PATH, or undefined. */
export function findRedisServer(): string | undefined {
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, 'redis-server');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

// Safety net: a suite that dies before its afterAll must not leave redis-servers behind.
const liveChildren = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of liveChildren) child.kill('SIGKILL');
});

/**
 * A private redis-server on a free loopback port in a temp dir, durable as the worker requires
 * (`appendonly yes`, `appendfsync always`) unless `durable: false`, restartable for fault tests.
 */
export async function startPrivateRedis(options: PrivateRedisOptions = {}): Promise<TestRedis> {
  const executable = findRedisServer();
  if (!executable) throw new Error('redis-server is not on PATH');
  const dir = mkdtempSync(join(tmpdir(), 'usdc-batch-redis-'));
  let port = await freePort();
  let child: ChildProcess | undefined;
  let output = '';
  let stopped = false;

  const start = async () => {
    output = '';
    const c = spawn(
      executable,
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        ...serverArgs(options.durable ?? true, options.extraArgs),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = c;
    liveChildren.add(c);
    let exited: string | undefined;
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-4_000);
    };
    c.stdout?.on('data', keep);
    c.stderr?.on('data', keep);
    c.once('error', (err) => (exited = `redis-server could not start: ${err.message}`));
    c.once('exit', (code, signal) => {
      liveChildren.delete(c);
      exited ??= `redis-server exited (${signal ?? `code ${code}`}): ${output.trim().slice(-1_000)}`;
    });
    // Generous: a busy machine can take seconds to start a process; an exit ends the wait at once.
    await waitForPong(port, '127.0.0.1', 45_000, () => exited);
  };
  const kill = async () => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      c.once('exit', () => resolve());
      c.kill('SIGKILL');
    });
  };

  // Another process may take the free port before redis-server binds it: try a fresh port.
  for (let attempt = 1; ; attempt++) {
    try {
      await start();
      break;
    } catch (err) {
      await kill();
      if (attempt >= 3 || !/in use|bind/i.test(String(err))) {
        rmSync(dir, { recursive: true, force: true });
        throw err;
      }
      port = await freePort();
    }
  }

  return {
    get url() {
      return `redis://127.0.0.1:${port}`;
    },
    get port() {
      return port;
    },
    get pid() {
      return child?.pid;
    },
    kind: 'process',
    dir,
    async restart({ downMs = 0 } = {}) {
      await kill();
      if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
      await start();
    },
    stopProcessOnly: kill,
    startAgain: start,
    async stop() {
      if (stopped) return;
      stopped = true;
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

let dockerAnswer: Promise<boolean> | undefined;

/** Whether a Docker engine answers: `/_ping` on its socket, else `docker info`. Cached per process. */
export function dockerEngineAnswers(): Promise<boolean> {
  dockerAnswer ??= probeDocker();
  return dockerAnswer;
}

async function probeDocker(): Promise<boolean> {
  const host = process.env['DOCKER_HOST'];
  const sockets: string[] = [];
  if (host?.startsWith('unix://')) sockets.push(host.slice('unix://'.length));
  else if (!host) {
    sockets.push('/var/run/docker.sock', join(homedir(), '.docker/run/docker.sock'));
    const runtimeDir = process.env['XDG_RUNTIME_DIR'];
    if (runtimeDir) sockets.push(join(runtimeDir, 'docker.sock'));
  }
  for (const socketPath of sockets) {
    if (!existsSync(socketPath)) continue;
    const ok = await new Promise<boolean>((resolve) => {
      const req = request({ socketPath, path: '/_ping', timeout: 2_000 }, (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      });
      req.once('timeout', () => req.destroy());
      req.once('error', () => resolve(false));
      req.end();
    });
    if (ok) return true;
  }
  // A TCP or TLS DOCKER_HOST, or a socket elsewhere: ask the client, briefly.
  const info = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], {
    timeout: 5_000,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return info.status === 0 && info.stdout.toString().trim() !== '';
}

/**
 * Redis in a container (testcontainers), bound to a fixed free host port so that a restart keeps
 * its address; the container's filesystem keeps the AOF across restarts.
 */
export async function startContainerRedis(options: PrivateRedisOptions = {}): Promise<TestRedis> {
  const { GenericContainer, Wait, getContainerRuntimeClient } = await import('testcontainers');
  const port = await freePort();
  const container = await new GenericContainer(REDIS_IMAGE)
    .withCommand([
      'redis-server',
      '--protected-mode',
      'no',
      ...serverArgs(options.durable ?? true, options.extraArgs),
    ])
    .withExposedPorts({ container: 6379, host: port })
    .withWaitStrategy(Wait.forLogMessage(/Ready to accept connections/))
    .withStartupTimeout(120_000)
    .start();
  const host = container.getHost();
  const client = await getContainerRuntimeClient();
  const handle = client.container.getById(container.getId());
  let running = true;
  let stopped = false;
  const kill = async () => {
    if (!running) return;
    running = false;
    await handle.kill({ signal: 'SIGKILL' });
  };
  const start = async () => {
    await client.container.start(handle);
    running = true;
    await waitForPong(port, host, 60_000);
  };
  return {
    url: `redis://${host}:${port}`,
    port,
    kind: 'container',
    dir: undefined,
    async restart({ downMs = 0 } = {}) {
      await kill();
      if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
      await start();
    },
    stopProcessOnly: kill,
    startAgain: start,
    async stop() {
      if (stopped) return;
      stopped = true;
      running = false;
      await container.stop({ timeout: 0, remove: true, removeVolumes: true });
    },
  };
}

export type SuiteRedis = {
  readonly url: string;
  /** A fresh key and queue prefix for this suite; everything the suite writes starts with it. */
  readonly prefix: string;
  /** The server this suite owns, or undefined on a shared `REDIS_URL`. */
  readonly server: TestRedis | undefined;
  /** Deletes the suite's keys (shared Redis) or stops its own server. */
  close(): Promise<void>;
};

const NO_REDIS_HELP =
  'Tests need Redis. Install redis-server (Debian/Ubuntu: apt-get install -y redis-server), ' +
  'or start a Docker engine (testcontainers then runs the redis image), or set REDIS_URL to a ' +
  'Redis the tests may write to (each suite uses its own key prefix).';

/**
 * A Redis for one test suite: `REDIS_URL` when set and the suite need not restart it (shared, so the
 * suite writes under its own prefix and `close` deletes those keys); otherwise a private
 * redis-server; otherwise a container when a Docker engine answers; otherwise a clear error.
 */
export async function redisForSuite(
  options: { durable?: boolean; restartable?: boolean; extraArgs?: readonly string[] } = {},
): Promise<SuiteRedis> {
  const prefix = `t${randomBytes(5).toString('hex')}`;
  const shared = process.env['REDIS_URL'];
  // A volatile, restartable or specially configured server must be our own.
  if (shared && !options.restartable && options.durable !== false && !options.extraArgs) {
    return {
      url: shared,
      prefix,
      server: undefined,
      async close() {
        await deleteKeys(shared, `${prefix}*`);
      },
    };
  }
  const serverOptions: PrivateRedisOptions = {};
  if (options.durable !== undefined) serverOptions.durable = options.durable;
  if (options.extraArgs) serverOptions.extraArgs = options.extraArgs;
  let server: TestRedis;
  if (findRedisServer()) {
    try {
      server = await startPrivateRedis(serverOptions);
    } catch (err) {
      throw new Error(`${NO_REDIS_HELP} Starting a private redis-server failed: ${(err as Error).message}`, {
        cause: err,
      });
    }
  } else if (await dockerEngineAnswers()) {
    server = await startContainerRedis(serverOptions);
  } else {
    throw new Error(`${NO_REDIS_HELP} (No redis-server on PATH and no Docker engine answered.)`);
  }
  return { url: server.url, prefix, server, close: () => server.stop() };
}

/** Deletes every key matching `pattern` (SCAN, never KEYS or FLUSHDB: the Redis may be shared). */
export async function deleteKeys(url: string, pattern: string): Promise<number> {
  const client = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: true });
  client.on('error', () => {});
  let deleted = 0;
  try {
    await client.connect();
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) deleted += await client.del(...keys);
    } while (cursor !== '0');
  } finally {
    client.disconnect();
  }
  return deleted;
}
