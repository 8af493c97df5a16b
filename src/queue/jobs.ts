import type { Chain } from '../domain/chains.ts';

/**
 * The job contract between producers (ingest, retry, schedules) and the worker. Job data is only a
 * pointer: the transfer record in Redis is the truth, and the worker re-reads it (and treats job
 * data as `unknown`, since it may have been written by older code).
 */
export type TransferJobData = { readonly batchId: string; readonly transferId: string };

/** One queue per source chain, so rows of different chains never wait for each other. */
export function queueNameFor(source: Chain): string {
  return `transfers-${source}`;
}

/**
 * Job ids derive from the batch and transfer ids (both `[A-Za-z0-9_.-]`, so `/` cannot be
 * ambiguous; BullMQ forbids only `:`). `round` is 0 for the first enqueue and counts `retry`
 * commands, because a duplicate job id is ignored only while the old job still exists.
 */
export function transferJobId(batchId: string, transferId: string, round = 0): string {
  return round === 0 ? `${batchId}/${transferId}` : `${batchId}/${transferId}/r${round}`;
}

export function parseTransferJobData(data: unknown): TransferJobData | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const { batchId, transferId } = data as Record<string, unknown>;
  if (typeof batchId !== 'string' || typeof transferId !== 'string') return undefined;
  return { batchId, transferId };
}
