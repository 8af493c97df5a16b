import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  dockerEngineAnswers,
  findRedisServer,
  redisForSuite,
  startContainerRedis,
  startPrivateRedis,
  type TestRedis,
} from '../helpers/redis.ts';

const started: TestRedis[] = [];
const clients: Redis[] = [];
afterAll(async () => {
  for (const c of clients) c.disconnect();
  await Promise.all(started.map((s) => s.stop()));
});

function client(url: string): Redis {
  const c = new Redis(url, { maxRetriesPerRequest: 1 });
  c.on('error', () => {});
  clients.push(c);
  return c;
}

/** Whether anything accepts a TCP connection on the port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ port, host: '127.0.0.1' });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

let docker = false;
beforeAll(async () => {
  docker = await dockerEngineAnswers();
});

describe.runIf(findRedisServer() !== undefined)('a private redis-server', () => {
  it('is durable by default: AOF on, fsync always, no eviction', async () => {
    const server = await startPrivateRedis();
    started.push(server);
    const c = client(server.url);
    expect(await c.config('GET', 'appendonly')).toEqual(['appendonly', 'yes']);
    expect(await c.config('GET', 'appendfsync')).toEqual(['appendfsync', 'always']);
    expect(await c.config('GET', 'maxmemory-policy')).toEqual(['maxmemory-policy', 'noeviction']);
    expect(await c.config('GET', 'bind')).toEqual(['bind', '127.0.0.1']);
    expect(server.kind).toBe('process');
  });

  it('keeps acknowledged writes across a crash (SIGKILL) and restart on the same port', async () => {
    const server = await startPrivateRedis();
    started.push(server);
    const url = server.url;
    const before = client(url);
    await before.set('k', 'survives');
    await before.hset('h', 'f', '1');
    before.disconnect();

    await server.restart({ downMs: 100 });
    expect(server.url).toBe(url);
    const after = client(url);
    expect(await after.get('k')).toBe('survives');
    expect(await after.hget('h', 'f')).toBe('1');
  });

  it('loses its data on a crash when asked to be volatile (durable: false)', async () => {
    const server = await startPrivateRedis({ durable: false });
    started.push(server);
    const c = client(server.url);
    expect(await c.config('GET', 'appendonly')).toEqual(['appendonly', 'no']);
    await c.set('k', 'gone');
    c.disconnect();
    await server.restart();
    expect(await client(server.url).get('k')).toBeNull();
  });

  it('stays down between stopProcessOnly and startAgain, then has its data back', async () => {
    const server = await startPrivateRedis();
    started.push(server);
    await client(server.url).set('k', 'v');
    await server.stopProcessOnly();
    expect(await listening(server.port)).toBe(false);
    await server.startAgain();
    expect(await client(server.url).get('k')).toBe('v');
  });

  it('stops: the port closes and the temp dir is removed, and a second stop is harmless', async () => {
    const server = await startPrivateRedis();
    const dir = server.dir as string;
    expect(existsSync(dir)).toBe(true);
    await server.stop();
    await server.stop();
    expect(existsSync(dir)).toBe(false);
    expect(await listening(server.port)).toBe(false);
  });

  it("fails fast with redis-server's own complaint when it cannot start, leaving nothing behind", async () => {
    // It saw the server exit and says why (not a wait for a port that never opens).
    await expect(startPrivateRedis({ extraArgs: ['--no-such-directive', 'x'] })).rejects.toThrow(
      /redis-server exited.*Bad directive/s,
    );
  });
});

describe('redisForSuite', () => {
  it('gives each suite its own server and prefix when REDIS_URL is not set', async () => {
    const saved = process.env['REDIS_URL'];
    delete process.env['REDIS_URL'];
    try {
      const a = await redisForSuite();
      const b = await redisForSuite();
      expect(a.prefix).not.toBe(b.prefix);
      expect(a.prefix).toMatch(/^t[0-9a-f]{10}$/);
      expect(a.url).not.toBe(b.url);
      expect(await client(a.url).ping()).toBe('PONG');
      await a.close();
      await b.close();
      expect(await listening(a.server?.port as number)).toBe(false);
    } finally {
      if (saved !== undefined) process.env['REDIS_URL'] = saved;
    }
  });

  it('uses REDIS_URL when set and deletes only its own keys on close', async () => {
    const shared = await startPrivateRedis();
    started.push(shared);
    const saved = process.env['REDIS_URL'];
    process.env['REDIS_URL'] = shared.url;
    try {
      const suite = await redisForSuite();
      expect(suite.url).toBe(shared.url);
      expect(suite.server).toBeUndefined();
      const c = client(shared.url);
      await c.set(`${suite.prefix}:a`, '1');
      await c.set(`${suite.prefix}:b:c`, '2');
      await c.set('someone-else:key', '3');
      await suite.close();
      expect(await c.keys('*')).toEqual(['someone-else:key']);

      // A suite that must restart or crash its Redis gets its own, even with REDIS_URL set.
      const own = await redisForSuite({ restartable: true });
      expect(own.url).not.toBe(shared.url);
      expect(own.server?.kind).toBe(docker && !findRedisServer() ? 'container' : 'process');
      await own.close();
    } finally {
      if (saved === undefined) delete process.env['REDIS_URL'];
      else process.env['REDIS_URL'] = saved;
    }
  });

  it('says how to get a Redis when there is no redis-server, no Docker engine and no REDIS_URL', async (ctx) => {
    if (docker) ctx.skip();
    const saved = { path: process.env['PATH'], url: process.env['REDIS_URL'] };
    const empty = mkdtempSync(join(tmpdir(), 'usdc-batch-nopath-'));
    process.env['PATH'] = empty;
    delete process.env['REDIS_URL'];
    try {
      await expect(redisForSuite()).rejects.toThrow(
        /Tests need Redis\. Install redis-server .*apt-get install -y redis-server.*Docker engine.*REDIS_URL/s,
      );
    } finally {
      process.env['PATH'] = saved.path;
      if (saved.url !== undefined) process.env['REDIS_URL'] = saved.url;
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe('a Redis container (testcontainers)', () => {
  it('starts, keeps its AOF across a crash and restart, and stops', async (ctx) => {
    // Only where a Docker engine answers; elsewhere the private redis-server is used instead.
    if (!docker) ctx.skip();
    const server = await startContainerRedis();
    started.push(server);
    const c = client(server.url);
    expect(await c.config('GET', 'appendfsync')).toEqual(['appendfsync', 'always']);
    await c.set('k', 'survives');
    c.disconnect();
    await server.restart();
    expect(await client(server.url).get('k')).toBe('survives');
    await server.stop();
    expect(await listening(server.port)).toBe(false);
  });
});
