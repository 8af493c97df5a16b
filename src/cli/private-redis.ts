import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { UsdcBatchError } from '../domain/errors.ts';
import { killOnExit, tiedToThisProcess } from './lifetime.ts';

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() =>
        typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no free port')),
      );
    });
  });
}

/** A redis-server this process started, and how to stop it. */
export type PrivateRedis = { readonly url: string; stop(): Promise<void> };

/**
 * A private, durable redis-server from PATH (append-only, fsync on every write) on a free loopback
 * port with its data in `dir`: the demo's, and the sandbox's with `--redis`. Never a Redis someone
 * else runs.
 */
export async function startPrivateRedis(dir: string): Promise<PrivateRedis> {
  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).error) {
    throw new UsdcBatchError(
      'USDC_DEMO_NO_REDIS',
      'redis-server is not on PATH (apt-get install redis-server, brew install redis); or set REDIS_URL',
    );
  }
  const port = await freePort();
  // Tied to this process: no private Redis outlives the command that started it (cli/lifetime.ts),
  // even one killed by SIGKILL where setpriv can say so.
  const [command, args] = tiedToThisProcess('redis-server', [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    'yes',
    '--appendfsync',
    'always',
  ]);
  const child = spawn(command, args, { stdio: 'ignore' });
  killOnExit(child);
  const url = `redis://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => {});
    try {
      await probe.connect();
      await probe.ping();
      probe.disconnect();
      return { url, stop: () => stopRedis(child) };
    } catch {
      probe.disconnect();
      if (Date.now() > deadline || child.exitCode !== null) {
        child.kill('SIGKILL');
        throw new UsdcBatchError('USDC_DEMO_REDIS_START', 'the private redis-server did not start');
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** SIGTERM (it writes its append-only file and exits), SIGKILL after 3 s. */
async function stopRedis(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = new Promise((r) => setTimeout(r, 3_000).unref());
  await Promise.race([exited, timer]);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}
