import { connect, type TLSSocket } from 'node:tls';
import { UsdcBatchError } from '../domain/errors.ts';
import { displayUrl } from '../domain/url-display.ts';
import type { RedisEndpoint } from './redis-endpoint.ts';

/*
 * A `rediss://` REDIS_URL pointed at a Redis that does not speak TLS there (a plain Redis, its plain
 * port) or whose certificate this process does not trust: ioredis retries the handshake quietly,
 * so a command waited and then blamed an unreachable Redis. Before the first command, one TLS
 * handshake with the same defaults as ioredis's (Node's CAs, NODE_EXTRA_CA_CERTS, the host name
 * checked) says which it is, within seconds.
 */

/** How long a server that accepted the connection has to answer the TLS handshake. */
export const TLS_HANDSHAKE_TIMEOUT_MS = 3_000;
/** How long the TCP connection may take (ioredis's connectTimeout); beyond, the usual path reports. */
const CONNECT_TIMEOUT_MS = 5_000;

export class RedisTlsError extends UsdcBatchError {
  override name = 'RedisTlsError';
}

type Handshake = { readonly ok: true } | { readonly ok: false; readonly why: string; readonly hint: string };

/**
 * For a `rediss://` REDIS_URL (without Sentinels): resolves once a TLS handshake with its host completed, and throws a
 * RedisTlsError naming REDIS_URL when the host accepted the connection but the handshake failed or
 * did not come. Any other URL, and a host that does not accept the connection at all, are left to
 * the usual path (`cannot reach Redis`).
 */
export async function checkRedisTls(
  endpoint: RedisEndpoint,
  timeoutMs = TLS_HANDSHAKE_TIMEOUT_MS,
): Promise<void> {
  // Behind Sentinels the primary's host is learnt from them, on a Redis Cluster the nodes from its
  // slot map (REDIS_URL's host is not used): ioredis's own errors say what fails.
  if (endpoint.redisSentinels || endpoint.redisClusterNodes) return;
  let u: URL;
  try {
    u = new URL(endpoint.redisUrl);
  } catch {
    return;
  }
  if (u.protocol !== 'rediss:') return;
  const result = await handshake(u.hostname.replace(/^\[|\]$/g, ''), Number(u.port || 6379), timeoutMs);
  if (result === undefined || result.ok) return;
  throw new RedisTlsError(
    'USDC_REDIS_TLS',
    `REDIS_URL is rediss:// but Redis at ${displayUrl(u)} did not complete a TLS handshake (${result.why}): ${result.hint}`,
  );
}

/** One handshake; undefined when the TCP connection itself did not open (not a TLS matter). */
async function handshake(host: string, port: number, timeoutMs: number): Promise<Handshake | undefined> {
  return await new Promise((resolve) => {
    let tcp = false;
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    // As ioredis connects for rediss:// (tls.connect with the host and port, nothing else).
    const socket: TLSSocket = connect({ host, port });
    const done = (result: Handshake | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    timer = setTimeout(() => done(undefined), CONNECT_TIMEOUT_MS);
    socket.once('connect', () => {
      tcp = true;
      clearTimeout(timer);
      timer = setTimeout(
        () =>
          done({
            ok: false,
            why: `no TLS answer within ${Math.round(timeoutMs / 1000)} s`,
            hint: 'is it a plain Redis (redis://), or not its tls-port?',
          }),
        timeoutMs,
      );
    });
    socket.once('secureConnect', () => done({ ok: true }));
    // Kept for the socket's life: a TLS alert can follow the first error.
    socket.on('error', (err: NodeJS.ErrnoException) => done(tcp ? failure(err) : undefined));
    socket.once('close', () => done(tcp ? plainClose() : undefined));
  });
}

function failure(err: NodeJS.ErrnoException): Handshake {
  const code = err.code ?? '';
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ALTNAME/.test(code)) {
    return {
      ok: false,
      why: `its certificate is not trusted: ${err.message.split(';')[0]}`,
      hint: 'give its CA in NODE_EXTRA_CA_CERTS',
    };
  }
  if (code === 'ECONNRESET' || code.startsWith('ERR_SSL')) return plainClose();
  return { ok: false, why: err.message.slice(0, 120), hint: 'is it a TLS port?' };
}

function plainClose(): Handshake {
  return {
    ok: false,
    why: 'the server did not answer in TLS',
    hint: 'is it a plain Redis (redis://), or not its tls-port?',
  };
}
