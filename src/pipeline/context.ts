import type { Logger } from '../log/logger.ts';
import type { TransferRecord } from '../store/transfer-record.ts';
import type { PipelineDeps } from './pipeline-deps.ts';
import type { PipelinePolicy } from './policy.ts';

/** One run of one transfer: its deps, its clock, its shutdown signal and its ids. */
export type Ctx = {
  readonly deps: PipelineDeps;
  readonly policy: PipelinePolicy;
  readonly now: () => number;
  readonly signal: AbortSignal;
  readonly log: Logger;
  readonly batchId: string;
  readonly transferId: string;
};

/** The same run, acting on another transfer's record (settling a permit it left presumed used). */
export function otherTransfer(ctx: Ctx, batchId: string, transferId: string): Ctx {
  return { ...ctx, batchId, transferId, log: ctx.deps.logger.child({ batchId, transferId }) };
}

/** Ends the run: the job is handed back to the queue to run again after `delayMs`. */
export class Later extends Error {
  readonly delayMs: number;
  readonly reason: string;
  constructor(delayMs: number, reason: string) {
    super(reason);
    this.delayMs = delayMs;
    this.reason = reason;
  }
}

export async function loadRecord(ctx: Ctx): Promise<TransferRecord> {
  return (await ctx.deps.store.load(ctx.batchId, ctx.transferId)) as TransferRecord;
}

/** Waits inside the job; on shutdown the job is parked with its saved steps. */
export async function wait(ctx: Ctx, ms: number): Promise<void> {
  if (ctx.signal.aborted) throw new Later(ms, 'shutting down');
  await new Promise<void>((resolve) => {
    const onAbort = () => {
      clearTimeout(t);
      resolve();
    };
    const t = setTimeout(() => {
      ctx.signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    ctx.signal.addEventListener('abort', onAbort, { once: true });
  });
  if (ctx.signal.aborted) throw new Later(0, 'shutting down');
}

/** A delay with ±25 % jitter, so that transfers waiting for the same thing do not come back at once. */
export function jittered(ctx: Ctx, ms: number): number {
  return Math.round(ms * (0.75 + (ctx.deps.random ?? Math.random)() * 0.5));
}
