import type { Redis } from 'ioredis';
import type { AddressInfo } from 'node:net';
import { readAccessFile } from '../../config/access-file.ts';
import { approverProblem } from '../../config/access-settings.ts';
import type { Config } from '../../config/config.ts';
import { readEnv } from '../../config/env-reader.ts';
import { loadConfig } from '../../config/load-config.ts';
import { ConfigError } from '../../domain/errors.ts';
import { buildApp } from '../../http/app.ts';
import { createAccessList, type AccessList } from '../../http/access-list.ts';
import { createLogger, type Logger } from '../../log/logger.ts';
import { startAuditHeadLog } from '../../store/audit-head.ts';
import { startControlsPublisher } from '../../store/published-controls.ts';
import { controlSettingsOf } from '../../config/control-settings.ts';
import { controlDigest } from '../../domain/control-digest.ts';
import { warnOnControlDrift } from '../../ops/control-drift.ts';
import { startScreeningWatch } from '../../ops/screening-watch.ts';
import { createProducer } from '../../queue/producer.ts';
import { watchPrimary } from '../../store/primary-watch.ts';
import { createRedis, waitForRedis } from '../../store/redis.ts';
import { createReplicaAcks } from '../../store/replica-acks.ts';
import { checkRedisTls } from '../../store/redis-tls.ts';
import { EXIT } from '../exit-codes.ts';
import { holdUntilExit } from '../lifetime.ts';

/**
 * `usdc-batch serve`: the HTTP API on HTTP_HOST:HTTP_PORT until SIGINT/SIGTERM. Needs a credential:
 * ACCESS_FILE, or HOOK_TOKEN, APPROVER_TOKEN, METRICS_TOKEN (checked with the rest of the
 * configuration before anything starts); re-reads ACCESS_FILE on SIGHUP. Prints the address it is
 * bound to (with the port the system chose for HTTP_PORT=0).
 */
export async function run(_args: string[], _options: Record<string, unknown>): Promise<number> {
  const config = loadConfig(readEnv(), { access: true });
  const logger = createLogger(config.logLevel, undefined, config.logFormat);
  // docs/screening.md: a listed recipient is an invalid row; the lists reload on change and SIGHUP.
  // A list that cannot be read stops the start here (exit 2), before anything is open.
  const screening = await startScreeningWatch(config, logger);
  await checkRedisTls(config);
  const redis = createRedis(config, { role: 'client', logger, quiet: true });
  try {
    await waitForRedis(redis, config);
  } catch (err) {
    redis.disconnect();
    throw err;
  }
  const producer = createProducer({ connection: redis, prefix: config.queuePrefix });
  // docs/replicated-redis.md: changes are answered once the replicas hold them.
  const acks = createReplicaAcks({
    redis,
    prefix: config.queuePrefix,
    setting: config.redisReplicaAcks,
    timeoutMs: config.redisReplicaAckTimeoutMs,
    logger,
  });
  const primary = watchPrimary({ redis, prefix: config.queuePrefix, logger, intervalMs: 5_000 });
  const access = createAccessList(config.credentials);
  const onHangup = () => reloadAccessFile(config, access, logger);
  process.on('SIGHUP', onHangup);
  const app = await buildApp({ config, redis, producer, acks, logger, access, screening: screening.lists });
  const auditHead = startAuditHeadLog({ file: config.auditLogFile, logger });
  const controls = await publishApiControls(config, redis, logger);
  const close = async () => {
    process.off('SIGHUP', onHangup);
    screening.stop();
    await app.close();
    auditHead.stop();
    await controls.stop();
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
 * The controls this API enqueues under (docs/promises.md, promise 5): published, and compared at
 * start with the running workers' — they enforce theirs before signing.
 */
async function publishApiControls(config: Config, redis: Redis, logger: Logger) {
  const settings = controlSettingsOf(config);
  const prefix = config.queuePrefix;
  const publisher = startControlsPublisher({
    redis,
    prefix,
    role: 'api',
    digest: controlDigest(settings),
    settings,
    logger,
  });
  await warnOnControlDrift({ redis, prefix, settings, logger });
  return publisher;
}

/**
 * SIGHUP: ACCESS_FILE read again (docs/access.md). A good file replaces the credentials at once;
 * a file with any problem (or without the approver the address book needs) changes nothing, and
 * says why at `warn`.
 */
export function reloadAccessFile(config: Config, access: AccessList, logger: Logger): void {
  if (config.accessFile === undefined) {
    logger.info(
      'SIGHUP: no ACCESS_FILE to re-read (the credentials are HOOK_TOKEN, APPROVER_TOKEN, METRICS_TOKEN)',
    );
    return;
  }
  const read = readAccessFile(config.accessFile);
  const problems = [...read.problems];
  if (problems.length === 0 && read.credentials.length === 0) problems.push('lists no credential');
  const approver = problems.length === 0 ? approverProblem(read.credentials, config) : undefined;
  if (approver) problems.push(approver);
  if (problems.length > 0) {
    logger.warn(
      { problems, kept: access.current().map((c) => c.name) },
      'ACCESS_FILE not reloaded: it has problems; the credentials in use are kept',
    );
    return;
  }
  access.replace(read.credentials);
  logger.info(
    { credentials: read.credentials.map((c) => ({ name: c.name, roles: c.roles })) },
    'ACCESS_FILE reloaded',
  );
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
