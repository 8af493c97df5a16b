import { readEnv } from '../../config/env-reader.ts';
import { loadConfig } from '../../config/load-config.ts';
import { createLogger, type Logger } from '../../log/logger.ts';
import { signingKeys } from '../../signing/evm/keystore.ts';
import { keepCompiledModules } from '../compile-cache.ts';
import { EXIT } from '../exit-codes.ts';
import { holdUntilExit } from '../lifetime.ts';

/**
 * `usdc-batch worker`. Configuration is loaded before anything else, so a misconfigured worker
 * stops with every problem listed (exit 2) before it touches Redis or the service. It runs until
 * SIGINT/SIGTERM: the first signal stops taking jobs and parks or finishes active ones; a second
 * exits at once. Signals are taken from before the start: one that arrives while the worker starts
 * (its transfer workers may already be taking jobs) stops it the same way once it has started,
 * instead of killing it mid-way.
 */
export async function run(_args: string[], _options: Record<string, unknown>): Promise<number> {
  // The one command that reads keys (docs/keys.md); `demo` runs a worker too.
  const config = loadConfig(readEnv(), { service: true, signingKey: true, keys: signingKeys });
  const logger = createLogger(config.logLevel, undefined, config.logFormat);
  const signal = firstSignal(logger);
  // The worker itself (viem, BullMQ, the pipeline: some 1,400 module files, most of a start's CPU)
  // loads once the configuration is valid: a misconfigured worker says so in a fraction of the time.
  const { startWorker } = await import('../../worker/start-worker.ts');
  keepCompiledModules();
  const running = await startWorker(config, logger);
  // Whatever ends it — a signal, or its log's reader going away (`2>&1 | head`: cli/lifetime.ts) —
  // it stops as on a signal: finishing or parking the active transfers.
  const stop = holdUntilExit(() => running.close());
  logger.info({ signal: await signal }, 'shutting down: finishing or parking active transfers');
  await stop().catch((err: unknown) => logger.error({ err }, 'error while shutting down'));
  logger.info('worker stopped');
  return EXIT.ok;
}

/** The first SIGINT or SIGTERM from now on; a second one exits at once (130). */
function firstSignal(logger: Logger): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    let seen = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (seen) {
        logger.warn({ signal }, 'second signal: exiting now');
        process.exit(130);
      }
      seen = true;
      resolve(signal);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}
