import { once } from 'node:events';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';
import { redisForSuite, type SuiteRedis } from '../helpers/redis.ts';
import { newPrefix } from './ingest-fixtures.ts';

/**
 * Issue 23 item 2.8: `serve` on a port in use said `listen EADDRINUSE`, `sandbox` said `port 8787
 * is already in use`. Each names the setting that changes it, and exits 2 (a configuration error).
 */
describe('a port already in use is named with its setting', () => {
  let redis: SuiteRedis;
  let holder: Server;
  let port: number;
  beforeAll(async () => {
    redis = await redisForSuite();
    holder = createServer();
    holder.listen(0, '127.0.0.1');
    await once(holder, 'listening');
    port = (holder.address() as AddressInfo).port;
  });
  afterAll(async () => {
    holder?.close();
    await redis?.close();
  });

  it('serve says HTTP_PORT, exit 2', async () => {
    const res = await runCli(['serve'], {
      REDIS_URL: redis.url,
      QUEUE_PREFIX: newPrefix(),
      HOOK_TOKEN: 'busy-port-token-0123456789',
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: String(port),
    });
    expect(res.code, res.stderr).toBe(2);
    expect(res.stderr).toContain(`HTTP_PORT: port ${port} on 127.0.0.1 is already in use`);
    expect(res.stderr).toContain('set HTTP_PORT to another port');
    expect(res.stderr).not.toContain('EADDRINUSE');
  });

  it('sandbox says --port, exit 2', async () => {
    const res = await runCli(['sandbox', '--port', String(port)], {});
    expect(res.code, res.stderr).toBe(2);
    expect(res.stderr).toContain(`error: port ${port} is already in use: choose another with --port N`);
  });
});
