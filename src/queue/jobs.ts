import type { Chain } from '../domain/chains.ts';
import { formatUsdc } from '../domain/money.ts';

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

/** A transfer job's name says what it pays, as bull-board lists it: `BASE→ARB 125.00 USDC`. */
export function transferJobName(t: {
  from: Chain;
  to?: Chain | undefined;
  amount?: bigint | undefined;
}): string {
  if (t.to === undefined || t.amount === undefined) return `${t.from}→? transfer`;
  return `${t.from}→${t.to} ${formatUsdc(t.amount)} USDC`;
}

/**
 * A settle job looks again at a needs_review transfer once its payload has expired; its name says
 * so — `settle BASE→ARB 125.00 USDC (needs_review: re-check once its permit has expired)` — and
 * starts with `settle` (older ones: `settle <transfer job name>`, or `settle` alone).
 */
export const SETTLE_JOB_PREFIX = 'settle';
export function settleJobName(transferName: string, payload?: 'permit' | 'solana'): string {
  const what =
    payload === 'permit' ? 'its permit' : payload === 'solana' ? 'its Solana transaction' : 'its payload';
  return `${SETTLE_JOB_PREFIX} ${transferName} (needs_review: re-check once ${what} has expired)`;
}
export function isSettleJob(name: string): boolean {
  return name === SETTLE_JOB_PREFIX || name.startsWith(`${SETTLE_JOB_PREFIX} `);
}

/** The round a job id belongs to (`…/r2` → 2; no suffix → 0; a settle job's is its transfer's). */
export function roundOfJobId(jobId: string | undefined): number {
  const m = /\/r([0-9]+)(?:\/settle[0-9]*)?$/.exec(jobId ?? '');
  return m ? Number(m[1]) : 0;
}

export function parseTransferJobData(data: unknown): TransferJobData | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const { batchId, transferId } = data as Record<string, unknown>;
  if (typeof batchId !== 'string' || typeof transferId !== 'string') return undefined;
  return { batchId, transferId };
}
