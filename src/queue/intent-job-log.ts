import type { Redis } from 'ioredis';
import type { Chain } from '../domain/chains.ts';
import { logOnFinishedJob } from './job-hash.ts';
import { openTransferQueues } from './transfer-queues.ts';

/*
 * An intent's final status told to the transfer job that submitted it (docs/data-model.md
 * "Transfer job hash"): one more line in that job's log (`intent complete`, `intent failed`),
 * through BullMQ's `addJobLog`, once job-hash.ts found the job finished with a result naming the
 * intent. The job's return value stays the transfer as the job left it.
 */

/** The intent a line is about. */
export type IntentRef = { readonly batchId: string; readonly transferId: string; readonly intentId: string };

/**
 * What became of the line: `logged`, `unfinished` (the job has not ended: no result yet) or `other`
 * (no such job, or its result is not about this intent: an earlier round, a needs_review job that
 * `resolve` settled).
 */
export type IntentLine = 'logged' | 'unfinished' | 'other';

export type IntentJobLog = {
  /** Logs `intent <status>` on the first of `jobIds` (in `source`'s queue) whose result names the intent. */
  add(source: Chain, jobIds: readonly string[], intent: IntentRef, status: string): Promise<IntentLine>;
  close(): Promise<void>;
};

/** The transfer queues' jobs as the follower sees them, on the shared client. */
export function createIntentJobLog(redis: Redis, prefix: string): IntentJobLog {
  const queues = openTransferQueues(redis, prefix);
  return {
    async add(source, jobIds, intent, status) {
      let unfinished = false;
      const line = `${new Date().toISOString()} follow: intent ${status}`;
      for (const jobId of jobIds) {
        const job = { queue: queues.of(source), jobId };
        const done = await logOnFinishedJob(redis, job, line, (result) => namesIntent(result, intent));
        if (done === 'logged') return done;
        if (done === 'unfinished') unfinished = true;
      }
      return unfinished ? 'unfinished' : 'other';
    },
    async close() {
      await queues.close();
    },
  };
}

/** Whether a job's result is about this intent: the same batch, transfer and intent. */
function namesIntent(result: unknown, intent: IntentRef): boolean {
  if (typeof result !== 'object' || result === null) return false;
  const r = result as Record<string, unknown>;
  return (
    r['batch_id'] === intent.batchId &&
    r['transfer_id'] === intent.transferId &&
    r['intent_id'] === intent.intentId
  );
}
