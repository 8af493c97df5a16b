import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';
import { randomEvmAddress, TEST_EVM_KEY } from '../helpers/fixtures.ts';
import { freePort, startPrivateRedis, type TestRedis } from '../helpers/redis.ts';
import { startServe } from '../helpers/serve.ts';

/*
 * Issue 33, finding 10: `rediss://` to a plain Redis made `batches` wait silently (and then blame an
 * unreachable Redis), a TLS Redis whose certificate is not trusted was "unreachable" too, and a
 * malformed `%` escape in REDIS_URL said "URI malformed" without naming the variable.
 */

const HOOK = 'hook-token-redis-url-0123456789';
// What `worker` and `serve` need besides Redis (the service is never called here).
const SETTINGS = {
  TRANSFER_API_URL: 'http://127.0.0.1:9',
  TRANSFER_API_KEY: 'sk_test_redis_url',
  EVM_PRIVATE_KEY: TEST_EVM_KEY,
  PERMIT_SPENDER: randomEvmAddress(),
  HOOK_TOKEN: HOOK,
};
// Nothing listens here: a URL that were accepted would meet no Redis (never the machine's 6379).
const NOBODY = await freePort();
const opensslMissing = spawnSync('openssl', ['version'], { stdio: 'ignore' }).status !== 0;

/** A self-signed certificate for 127.0.0.1 (openssl), in `dir`. */
function selfSigned(dir: string): { cert: string; key: string } {
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  const r = spawnSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`openssl: ${r.stderr}`);
  return { cert, key };
}

/** The one line a command printed on stderr. */
function oneLine(stderr: string): string {
  const lines = stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  return lines[0] as string;
}

describe('REDIS_URL problems are named, and a TLS mismatch is said within seconds', () => {
  let plain: TestRedis;
  let tls: TestRedis | undefined;
  let tlsPort = 0;
  let dir: string;
  let cert = '';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'usdc-redis-url-'));
    plain = await startPrivateRedis();
    if (!opensslMissing) {
      const pair = selfSigned(dir);
      cert = pair.cert;
      tlsPort = await freePort();
      // Plain on its port (how the helper sees it is up), TLS on tlsPort.
      tls = await startPrivateRedis({
        extraArgs: [
          '--tls-port',
          String(tlsPort),
          '--tls-cert-file',
          pair.cert,
          '--tls-key-file',
          pair.key,
          '--tls-ca-cert-file',
          pair.cert,
          '--tls-auth-clients',
          'no',
        ],
      });
    }
  });
  afterAll(async () => {
    await tls?.stop();
    await plain?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([['batches'], ['worker'], ['serve']])(
    '`%s` against a plain Redis with rediss:// says REDIS_URL did not complete a TLS handshake, and exits 2',
    async (command) => {
      const url = `rediss://127.0.0.1:${plain.port}`;
      // Killed at 30 s: before this fix `batches` took ~18 s and blamed an unreachable Redis, the
      // worker longer.
      const r = await runCli([command], { ...SETTINGS, REDIS_URL: url }, { timeoutMs: 30_000 });
      expect(r.code, r.stderr).toBe(2);
      expect(oneLine(r.stderr)).toBe(
        `error: REDIS_URL is rediss:// but Redis at ${url} did not complete a TLS handshake (no TLS answer within 3 s): is it a plain Redis (redis://), or not its tls-port?`,
      );
    },
  );

  it.skipIf(opensslMissing)(
    'a TLS Redis whose certificate is not trusted is named as such, with the way to trust it',
    async () => {
      const url = `rediss://127.0.0.1:${tlsPort}`;
      const r = await runCli(['batches'], { REDIS_URL: url }, { timeoutMs: 30_000 });
      expect(r.code, r.stderr).toBe(2);
      expect(oneLine(r.stderr)).toBe(
        `error: REDIS_URL is rediss:// but Redis at ${url} did not complete a TLS handshake (its certificate is not trusted: self-signed certificate): give its CA in NODE_EXTRA_CA_CERTS`,
      );
    },
  );

  it.skipIf(opensslMissing)(
    'a TLS Redis with a trusted certificate works for the CLI and serve',
    async () => {
      const env = { REDIS_URL: `rediss://127.0.0.1:${tlsPort}`, NODE_EXTRA_CA_CERTS: cert, HOOK_TOKEN: HOOK };
      const r = await runCli(['batches'], env);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('no batches yet');
      const serve = await startServe(env);
      try {
        const ready = await serve.call('/readyz', { token: HOOK });
        expect(ready.status).toBe(200);
      } finally {
        await serve.stop();
      }
    },
  );

  it('a malformed %-escape in REDIS_URL is a configuration error naming the variable, not "URI malformed"', async () => {
    const r = await runCli(['batches'], { REDIS_URL: `redis://:%zz@127.0.0.1:${NOBODY}` });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toBe(
      'Configuration is invalid:\n  - REDIS_URL: has a malformed %-escape in its user name or password (write % as %25)\n',
    );
  });
});
