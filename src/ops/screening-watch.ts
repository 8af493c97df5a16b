import type { Config } from '../config/config.ts';
import {
  loadScreeningLists,
  watchScreeningLists,
  type ReloadReport,
  type ScreeningLists,
} from '../config/screening/screening-lists.ts';
import type { Screen } from '../ingest/row-validator.ts';
import type { Logger } from '../log/logger.ts';

/** How often a long-running process looks at its lists' files (docs/screening.md: at least every 60 s). */
export const LIST_CHECK_MS = 60_000;

export type ScreeningWatch = {
  readonly lists: ScreeningLists;
  stop(): void;
};

/**
 * The sanctions lists of a long-running process (`worker`, `serve`): read at start (a file that
 * cannot be read or parsed is a ConfigError naming it: exit 2), read again when a file changes and
 * on SIGHUP; a file that then fails leaves the lists in force, logged at `error`. `onChange` runs
 * after each reload that changed a list.
 */
export async function startScreeningWatch(
  config: Pick<Config, 'screeningLists' | 'screeningMaxAgeMs' | 'network'>,
  logger: Logger,
  onChange: () => void = () => {},
): Promise<ScreeningWatch> {
  const lists = await loadScreeningLists(config.screeningLists, config.screeningMaxAgeMs);
  for (const l of lists.lists()) logger.info(listFacts(l), 'sanctions list loaded');
  if (lists.lists().length === 0 && config.network === 'mainnet') {
    logger.warn('no sanctions list screens recipients (SCREENING_LISTS is not set; docs/screening.md)');
  }
  const stale = lists.staleReason(Date.now());
  if (stale) logger.error(stale);
  const reported = (report: ReloadReport) => {
    logReload(logger, report);
    if (report.reloaded.length > 0) onChange();
  };
  const stopWatch = watchScreeningLists(lists, LIST_CHECK_MS, reported);
  const onHangup = () => {
    lists
      .reload(true)
      .then(reported, (err: unknown) =>
        logger.error({ err: { message: (err as Error).message } }, 'could not reload the sanctions lists'),
      );
  };
  if (config.screeningLists.length > 0) process.on('SIGHUP', onHangup);
  return {
    lists,
    stop() {
      stopWatch();
      process.off('SIGHUP', onHangup);
    },
  };
}

/** What a log line says of a list in force: its file, format, date and addresses by kind. */
function listFacts(l: ReturnType<ScreeningLists['lists']>[number]): Record<string, unknown> {
  const { evm, solana, other } = l.counts;
  return { list: l.name, format: l.format, date: l.date, evm, solana, other };
}

function logReload(logger: Logger, report: ReloadReport): void {
  for (const l of report.reloaded) logger.info(listFacts(l), 'sanctions list reloaded');
  for (const f of report.failed) {
    logger.error(
      { list: f.name, problem: f.message },
      'sanctions list could not be reloaded: the list in force is kept',
    );
  }
}

/** A lookup over the lists in force; undefined without lists (nothing to screen). */
export function screenOf(lists: ScreeningLists): Screen | undefined {
  return lists.lists().length === 0 ? undefined : (address) => lists.lookup(address);
}

/**
 * The lists of a one-shot command (`enqueue`, `recipients`), read once; a file that cannot be read
 * or parsed is a ConfigError naming it (exit 2).
 */
export async function loadScreen(
  config: Pick<Config, 'screeningLists' | 'screeningMaxAgeMs'>,
): Promise<Screen | undefined> {
  if (config.screeningLists.length === 0) return undefined;
  return screenOf(await loadScreeningLists(config.screeningLists, config.screeningMaxAgeMs));
}
