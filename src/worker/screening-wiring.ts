import type { Redis } from 'ioredis';
import type { Config } from '../config/config.ts';
import type { Logger } from '../log/logger.ts';
import { startScreeningWatch } from '../ops/screening-watch.ts';
import type { PipelineMetrics } from '../pipeline/pipeline-deps.ts';
import type { ScreeningGate } from '../pipeline/pipeline-deps.ts';
import { recordAudit } from '../store/audit.ts';
import { publishScreening } from '../store/screening-state.ts';
import type { ScreeningLists } from '../config/screening/screening-lists.ts';

/*
 * The worker's sanctions screening (docs/screening.md): its lists, read at start and again on a
 * change or SIGHUP (ops/screening-watch.ts), published for the status document and `/metrics`
 * (store/screening-state.ts), and the gate the pipeline checks before signing
 * (pipeline/screening-check.ts), whose refusals are audited (`who`: the list) and counted.
 */

export type WorkerScreening = { readonly gate: ScreeningGate; readonly lists: ScreeningLists; stop(): void };

export async function startWorkerScreening(deps: {
  readonly config: Config;
  readonly redis: Redis;
  readonly prefix: string;
  readonly logger: Logger;
  readonly metrics?: PipelineMetrics | undefined;
}): Promise<WorkerScreening> {
  const { config, redis, prefix, logger } = deps;
  const ref: { lists?: ScreeningLists } = {};
  const publish = async () => {
    const lists = ref.lists;
    if (!lists) return;
    await publishScreening(redis, prefix, {
      lists: lists.lists().map((l) => ({
        name: l.name,
        format: l.format,
        date: l.date,
        issuedAt: l.issuedAt,
        ...l.counts,
      })),
      maxAgeMs: config.screeningMaxAgeMs,
      onchain: config.screeningOnchain,
      at: Date.now(),
    }).catch((err: unknown) =>
      logger.warn(
        { err: { message: (err as Error).message } },
        'could not publish the sanctions lists in force',
      ),
    );
  };
  const watch = await startScreeningWatch(config, logger, () => void publish());
  ref.lists = watch.lists;
  await publish();
  const audit = { redis, prefix, auditLogFile: config.auditLogFile };
  const gate: ScreeningGate = {
    lookup: (address) => watch.lists.lookup(address),
    staleReason: (now) => watch.lists.staleReason(now),
    async refused(batchId, transferId, refusal) {
      deps.metrics?.screeningRefused?.(refusal.check);
      await recordAudit(audit, {
        who: refusal.who,
        action: 'screening_refused',
        batch: batchId,
        detail: { transfer: transferId, check: refusal.check, code: refusal.code, message: refusal.message },
      });
    },
  };
  return { gate, lists: watch.lists, stop: () => watch.stop() };
}

/** The treasury's own addresses are screened too: one on a list is logged at `error`, at start. */
export function screenOwnAddresses(
  lists: ScreeningLists,
  addresses: readonly string[],
  logger: Logger,
): void {
  for (const address of addresses) {
    const hit = lists.lookup(address);
    if (hit) {
      logger.error(
        { address, list: hit.list, date: hit.date },
        'a treasury address is on a sanctions list: rows paying it are rejected (recipient_sanctioned)',
      );
    }
  }
}
