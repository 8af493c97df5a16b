import { readEnv, type Env } from '../config/env-reader.ts';
import { displayUrl } from '../domain/url-display.ts';
import { createLogger, type LogFormat } from '../log/logger.ts';
import { traceTransferQueues, untraceTransferQueues } from '../queue/queue-telemetry.ts';
import { traceSettings } from '../trace/trace-settings.ts';
import { activeTracing, type Tracing } from '../trace/tracing.ts';

/**
 * The commands that trace (docs/traces.md) and their service names. Tracing starts before the
 * command's module is loaded (cli/main.ts), so the HTTP instrumentation is in place before anything
 * that calls out exists.
 */
export const TRACED_COMMANDS: Readonly<Record<string, string>> = {
  worker: 'usdc-batch-worker',
  serve: 'usdc-batch-api',
  enqueue: 'usdc-batch-cli',
};

export type CommandTracing = { readonly tracing: Tracing; stop(): Promise<void> };

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * Starts tracing for `command` when it traces and an OTLP endpoint is set (environment or `.env`);
 * undefined otherwise — then nothing of OpenTelemetry is loaded. A malformed OTEL_* variable is a
 * ConfigError (exit 2).
 */
export async function startCommandTracing(
  command: string,
  version: string,
): Promise<CommandTracing | undefined> {
  const service = TRACED_COMMANDS[command];
  // Already on in this process (a test that traces in-process): the command runs in it.
  if (service === undefined || activeTracing()) return undefined;
  const env = readEnv();
  const settings = traceSettings(env, service);
  if (!settings) return undefined;
  const logger = createLogger(logLevel(env), undefined, logFormat(env));
  const { startTracing } = await import('../trace/start-tracing.ts');
  const tracing = await startTracing(settings, {
    version,
    warn: (message) => logger.warn({ tracing: settings.serviceName }, message),
  });
  await traceTransferQueues();
  // Said once by the processes that run on; a command's own output is not cluttered with it.
  (command === 'enqueue' ? logger.debug : logger.info).call(
    logger,
    {
      endpoint: displayUrl(settings.endpoint),
      protocol: settings.protocol,
      service: settings.serviceName,
      sampler: `${settings.sampler.parentBased ? 'parentbased_' : ''}${settings.sampler.root}`,
    },
    'tracing on: exporting spans over OTLP',
  );
  return {
    tracing,
    async stop() {
      untraceTransferQueues();
      await tracing.shutdown();
    },
  };
}

// The command checks LOG_LEVEL and LOG_FORMAT itself (exit 2 when malformed); here a bad value
// only falls back.
function logLevel(env: Env): string {
  const level = env['LOG_LEVEL']?.trim().toLowerCase();
  return level && LOG_LEVELS.includes(level) ? level : 'info';
}

function logFormat(env: Env): LogFormat {
  const format = env['LOG_FORMAT']?.trim().toLowerCase();
  return format === 'json' || format === 'pretty' ? format : null;
}
