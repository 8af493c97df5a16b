import type { AddressInfo } from 'node:net';
import { readEnv } from '../../config/env-reader.ts';
import { loadConfig } from '../../config/load-config.ts';
import { ConfigError } from '../../domain/errors.ts';
import { buildApp } from '../../http/app.ts';
import { createLogger } from '../../log/logger.ts';
import { createProducer } from '../../queue/producer.ts';
import { watchPrimary } from '../../store/primary-watch.ts';
import { createRedis, waitForRedis } from '../../store/redis.ts';
import { createReplicaAcks } from '../../store/replica-acks.ts';
import { checkRedisTls } from '../../store/redis-tls.ts';
import { EXIT } from '../exit-codes.ts';
import { holdUntilExit } from '../lifetime.ts';

/**
 * `usdc-batch serve`: the HTTP API on HTTP_HOST:HTTP_PORT until SIGINT/SIGTERM. Needs HOOK_TOKEN
 * (checked with the rest of the configuration before anything starts). Prints the address it is
 * bound to (with the port the system chose for HTTP_PORT=0).
 */
export async function run(_args: string[], _options: Record<string, unknown>): Promise<number> {
  const config = loadConfig(readEnv(), { hook: true });
  const logger = createLogger(config.logLevel, undefined, config.logFormat);
  await checkRedisTls(config);
  const redis = createRedis(config, { role: 'client', logger, quiet: true });
  try {
    await waitForRedis(redis, config);
  } catch (err) {
    redis.disconnect();
    throw err;
  }
  const producer = createProducer({ connection: redis, prefix: config.queuePrefix });
  // README "Replicated Redis": changes are answered once the replicas hold them.
  const acks = createReplicaAcks({
    redis,
    prefix: config.queuePrefix,
    setting: config.redisReplicaAcks,
    timeoutMs: config.redisReplicaAckTimeoutMs,
    logger,
  });
  const primary = watchPrimary({ redis, logger, intervalMs: 5_000 });
  const app = await buildApp({ config, redis, producer, acks, logger });
  const close = async () => {
    await app.close();
    primary.stop();
    await acks.close();
    await producer.close();
    await redis.quit().catch(() => redis.disconnect());
  };
  // A closed stdout or stderr (cli/lifetime.ts) closes it as a signal does.
  const stop = holdUntilExit(close);
  try {
    await app.listen({ port: config.httpPort, host: config.httpHost });
    process.stdout.write(`listening on ${boundAddress(app.server.address())}\n`);
  } catch (err) {
    await stop();
    throw listenError(err, config.httpHost, config.httpPort);
  }
  await new Promise<void>((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      logger.info({ signal }, 'shutting down the HTTP API');
      stop().then(resolve, (err: unknown) => {
        logger.error({ err }, 'error while shutting down');
        resolve();
      });
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  });
  return EXIT.ok;
}

/**
 * A port already taken (or not ours to take) named with the setting that changes it, as a
 * configuration error (exit 2); any other failure as it came.
 */
function listenError(err: unknown, host: string, port: number): unknown {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE')
    return new ConfigError([
      {
        variable: 'HTTP_PORT',
        message: `port ${port} on ${host} is already in use: set HTTP_PORT to another port`,
      },
    ]);
  if (code === 'EADDRNOTAVAIL')
    return new ConfigError([
      {
        variable: 'HTTP_HOST',
        message: `${host} is not an address of this machine: set HTTP_HOST to one that is`,
      },
    ]);
  if (code === 'EACCES')
    return new ConfigError([
      {
        variable: 'HTTP_PORT',
        message: `port ${port} on ${host} may not be opened by this user: set HTTP_PORT to another port (above 1023)`,
      },
    ]);
  return err;
}

/** `http://127.0.0.1:8080`, `http://[::1]:8080`: the address the server is bound to, as a URL. */
function boundAddress(address: AddressInfo | string | null): string {
  if (address === null || typeof address === 'string') return String(address);
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}
