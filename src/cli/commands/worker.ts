import { readEnv } from '../../config/env-reader.ts';
import { loadConfig } from '../../config/load-config.ts';
import { createLogger } from '../../log/logger.ts';
import { signingKeys } from '../../signing/evm/keystore.ts';
import { startWorker } from '../../worker/start-worker.ts';
import { EXIT } from '../exit-codes.ts';
import { holdUntilExit } from '../lifetime.ts';

/**
 * `usdc-batch worker`. Configuration is loaded before anything else, so a misconfigured worker
 * stops with every problem listed (exit 2) before it touches Redis or the service. It runs until
 * SIGINT/SIGTERM: the first signal stops taking jobs and parks or finishes active ones; a second
 * exits at once.
 */
export async function run(_args: string[], _options: Record<string, unknown>): Promise<number> {
  // The one command that reads keys (docs/keys.md); `demo` runs a worker too.
  const config = loadConfig(readEnv(), { service: true, signingKey: true, keys: signingKeys });
  const logger = createLogger(config.logLevel, undefined, config.logFormat);
  const running = await startWorker(config, logger);
  // Whatever ends it — a signal, or its log's reader going away (`2>&1 | head`: cli/lifetime.ts) —
  // it stops as on a signal: finishing or parking the active transfers.
  const stop = holdUntilExit(() => running.close());
  await new Promise<void>((resolve) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) {
        logger.warn({ signal }, 'second signal: exiting now');
        process.exit(130);
      }
      stopping = true;
      logger.info({ signal }, 'shutting down: finishing or parking active transfers');
      stop().then(resolve, (err: unknown) => {
        logger.error({ err }, 'error while shutting down');
        resolve();
      });
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
  logger.info('worker stopped');
  return EXIT.ok;
}
