import type { Redis } from 'ioredis';
import type { TransferJobSink } from '../domain/transfer-jobs.ts';
import { readBatch, type Batch } from '../store/batch-record.ts';
import { NotFoundError } from './ops-error.ts';

/**
 * Operator actions shared by the CLI and the HTTP API. Each one is recorded in the audit stream
 * with its actor.
 */
export type OpsDeps = {
  readonly redis: Redis;
  readonly prefix: string;
  readonly jobs: TransferJobSink;
  /** Who acts: `cli:<name>`, or the HTTP credential's name. */
  readonly actor: string;
  /** AUDIT_LOG_FILE: the action's audit entry is appended to it too (audit.ts). */
  readonly auditLogFile?: string | undefined;
  readonly now?: () => number;
};

/** Where an intent an operator recorded is handed to be followed (the producer implements it). */
export type IntentFollowSink = {
  followIntent(batchId: string, transferId: string, intentId: string): Promise<void>;
};

/** The batch's record, or NotFoundError when there is no such batch. */
export async function requireBatch(deps: Pick<OpsDeps, 'redis' | 'prefix'>, batchId: string): Promise<Batch> {
  const b = await readBatch(deps.redis, deps.prefix, batchId);
  if (!b) throw new NotFoundError('USDC_BATCH_NOT_FOUND', `batch ${batchId} does not exist`);
  return b;
}
