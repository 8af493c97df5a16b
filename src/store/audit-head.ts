import type { Logger } from '../log/logger.ts';
import { appendedHeads, readAuditHead } from './audit-file.ts';

/*
 * Anchors for AUDIT_LOG_FILE (docs/audit.md "Anchoring the head"): a chain that still holds can
 * have lost its tail, or been emptied or rebuilt from scratch. The processes that append to the
 * file log its head hash at `info` every hour and when they stop, so that log storage — which the
 * file's writers do not control — keeps hashes that a later `audit --verify FILE --head HASH` must
 * find in the chain.
 */

const HOUR_MS = 60 * 60 * 1000;

/** Logs the file's current head hash (`audit log head`); a file that cannot be read at `warn`. */
export function logAuditHead(file: string, logger: Logger): void {
  try {
    const head = readAuditHead(file);
    if (head === undefined) logger.info({ auditLogFile: file, head: null }, 'audit log head: no file yet');
    else logger.info({ auditLogFile: file, head }, 'audit log head');
  } catch (err) {
    logger.warn(
      { auditLogFile: file, err: { message: (err as Error).message } },
      'audit log head unreadable',
    );
  }
}

/**
 * A long-running process (`serve`, `worker`): the head logged every `everyMs` (an hour) and when
 * `stop` is called. Nothing without AUDIT_LOG_FILE.
 */
export function startAuditHeadLog(deps: {
  readonly file: string | undefined;
  readonly logger: Logger;
  readonly everyMs?: number;
}): { stop(): void } {
  const { file, logger } = deps;
  if (file === undefined) return { stop() {} };
  const timer = setInterval(() => logAuditHead(file, logger), deps.everyMs ?? HOUR_MS);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      logAuditHead(file, logger);
    },
  };
}

/** A short-lived process (a CLI command) that appended: each file's head as it left it. */
export function logAppendedHeads(logger: Logger): void {
  for (const [file, head] of appendedHeads()) logger.info({ auditLogFile: file, head }, 'audit log head');
}
