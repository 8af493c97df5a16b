import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { endpointOptions } from '../../src/store/redis-endpoint.ts';
import { freePort } from '../helpers/redis.ts';

/*
 * Issue 33, item 10: the compose Redis takes a password (REDIS_PASSWORD, docs/security.md "In
 * compose"). There is no Docker engine here, so the redis service's own start script and
 * healthcheck, as docker-compose.yml writes them, run on this host: `docker-entrypoint.sh` (the
 * image's, which drops to the user redis) is a stand-in that execs redis-server on a free port in a
 * scratch directory, and `redis-cli` one that adds that port. Everything else is the file's text.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
type RedisService = {
  entrypoint?: string[];
  command?: string[];
  environment?: Record<string, string>;
  healthcheck?: { test?: string[] };
};
const compose = parseYaml(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8')) as {
  services: Record<string, RedisService & { profiles?: string[] }>;
};
const redisService = compose.services['redis'] as RedisService;
/** What compose hands the container: `$$` is a literal `$`. */
const unescaped = (text: string) => text.replaceAll('$$', '$');
/** The redis service's start: its entrypoint (`/bin/sh -c`) and its command, the script. */
const [SHELL = '', ...SHELL_ARGS] = redisService.entrypoint ?? [];
const START = [...SHELL_ARGS, unescaped(redisService.command?.[0] ?? '')];

const scratch = mkdtempSync(join(tmpdir(), 'usdc-batch-compose-redis-'));
const stand = join(scratch, 'bin');
mkdirSync(stand);
const REDIS_CLI = spawnSync('sh', ['-c', 'command -v redis-cli'], { encoding: 'utf8' }).stdout.trim();
function script(name: string, body: string) {
  writeFileSync(join(stand, name), `#!/bin/sh\n${body}\n`);
  chmodSync(join(stand, name), 0o755);
}
script('docker-entrypoint.sh', 'exec "$@" --port "$TEST_PORT" --dir "$TEST_DIR" --bind 127.0.0.1');
script('redis-cli', `exec ${REDIS_CLI} -p "$TEST_PORT" "$@"`);

let running: ChildProcess | undefined;
afterEach(async () => {
  const p = running;
  running = undefined;
  if (p && p.exitCode === null) {
    const exited = new Promise((resolve) => p.once('exit', resolve));
    p.kill('SIGTERM');
    await exited;
  }
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

type Started = { port: number; pid: number; env: NodeJS.ProcessEnv };

/** Starts the redis service's command with REDIS_PASSWORD as compose would pass it. */
async function startComposeRedis(password: string): Promise<Started> {
  const port = await freePort();
  const dir = mkdtempSync(join(scratch, 'data-'));
  const env = {
    ...process.env,
    PATH: `${stand}:${process.env['PATH'] ?? ''}`,
    REDIS_PASSWORD: password,
    TEST_PORT: String(port),
    TEST_DIR: dir,
  };
  const child = spawn(SHELL, START, {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running = child;
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const onData = (b: Buffer) => {
      out += b.toString();
      if (out.includes('Ready to accept connections')) resolve();
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`redis exited ${code}: ${out}`)));
  });
  return { port, pid: child.pid as number, env };
}

/** The service's healthcheck (`CMD-SHELL`), run with the container's environment. */
function healthcheck(env: NodeJS.ProcessEnv): number | null {
  const [kind, command = ''] = redisService.healthcheck?.test ?? [];
  expect(kind).toBe('CMD-SHELL');
  return spawnSync('/bin/sh', ['-c', unescaped(command)], { env, stdio: 'ignore' }).status;
}

async function ping(url: string): Promise<string> {
  const r = new Redis({ ...endpointOptions({ redisUrl: url }), lazyConnect: true, maxRetriesPerRequest: 0 });
  r.on('error', () => {});
  try {
    await r.connect();
    return await r.ping();
  } catch (e) {
    return (e as Error).message;
  } finally {
    r.disconnect();
  }
}

/** REDIS_URL of the services that use Redis, for this host and port. */
const urlsOf = (password: string, port: number) =>
  Object.entries(compose.services)
    .filter(([, s]) => s.environment?.['REDIS_URL'])
    .map(([name, s]) => ({
      name,
      url: (s.environment?.['REDIS_URL'] as string)
        .replace('${REDIS_PASSWORD:-}', password)
        .replace('@redis:6379', `@127.0.0.1:${port}`),
    }));

describe('the compose Redis password (REDIS_PASSWORD)', () => {
  it('passes REDIS_PASSWORD from .env or the shell to the redis service, empty by default', () => {
    expect(redisService.environment?.['REDIS_PASSWORD']).toBe('${REDIS_PASSWORD:-}');
  });

  it('with a password: Redis asks for it, the services URLs and the healthcheck give it, ps never shows it', async () => {
    const password = 'c0mpose-Pw_0123456789.abc~';
    const { port, pid, env } = await startComposeRedis(password);
    const anonymous = spawnSync(REDIS_CLI, ['-p', String(port), 'ping'], { encoding: 'utf8' });
    expect(anonymous.stdout).toMatch(/^NOAUTH Authentication required/);
    const urls = urlsOf(password, port);
    expect(urls.map((u) => u.name).sort()).toEqual(['api', 'sandbox-api', 'sandbox-worker', 'worker']);
    for (const u of urls) expect(await ping(u.url), u.name).toBe('PONG');
    expect(healthcheck(env)).toBe(0);
    expect(healthcheck({ ...env, REDIS_PASSWORD: 'wrong' })).not.toBe(0);
    // The durability the worker requires still holds.
    const admin = new Redis({ port, password, lazyConnect: true });
    await admin.connect();
    expect(await admin.config('GET', 'appendfsync')).toEqual(['appendfsync', 'always']);
    expect(await admin.config('GET', 'appendonly')).toEqual(['appendonly', 'yes']);
    expect(await admin.config('GET', 'maxmemory-policy')).toEqual(['maxmemory-policy', 'noeviction']);
    admin.disconnect();
    expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8')).not.toContain(password);
  });

  it('without one (a fresh clone, the sandbox profile): no password asked, the same URLs and healthcheck work', async () => {
    const { port, env } = await startComposeRedis('');
    expect(await ping(`redis://127.0.0.1:${port}`)).toBe('PONG');
    for (const u of urlsOf('', port)) expect(await ping(u.url), u.name).toBe('PONG');
    expect(healthcheck(env)).toBe(0);
  });

  it('refuses a password that would need escaping in REDIS_URL, naming the variable', () => {
    const r = spawnSync(SHELL, START, {
      env: { ...process.env, PATH: `${stand}:${process.env['PATH'] ?? ''}`, REDIS_PASSWORD: 'p@ss word' },
      encoding: 'utf8',
    });
    expect(r.status).toBe(64);
    expect(r.stderr).toMatch(/^REDIS_PASSWORD: use letters, digits/);
  });
});
