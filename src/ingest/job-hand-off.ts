import type { TransferRequest } from '../domain/transfer.ts';
import type { TransferJobSink, TransferJobSpec } from '../domain/transfer-jobs.ts';
import {
  closeBatch,
  openBatch,
  writeTransferChunks,
  type BatchPlan,
  type BatchWriterDeps,
  type WriteOptions,
  type WriteResult,
} from '../store/batch-writer.ts';

/**
 * Where a row becomes a job: the store writes the batch's records (src/store/batch-writer.ts) and
 * yields each chunk's rows it left `queued`; each gets one job on its source chain's queue, named by
 * its destination and amount, before the batch is marked enqueued (a held batch's rows wait for
 * approval: src/ingest/queued-jobs.ts). The job id comes from the transfer id, so a re-run after a
 * crash between the two — which finds the batch not yet enqueued and completes it — adds none twice
 * and misses none (src/queue/producer.ts; the sweeper re-queues any transfer still without a job).
 */
export async function writeBatchWithJobs(
  deps: BatchWriterDeps & { readonly jobs: TransferJobSink },
  plan: BatchPlan,
  options: WriteOptions,
): Promise<WriteResult> {
  const open = await openBatch(deps, plan, options);
  if (open.status !== 'open') return open;
  for await (const queued of writeTransferChunks(deps, plan, open.transfers, options)) {
    if (!open.held && queued.length > 0) await deps.jobs.addTransfers(plan.batchId, queued.map(jobSpecOf));
  }
  return await closeBatch(deps, plan.batchId, open);
}

export function jobSpecOf(t: TransferRequest): TransferJobSpec {
  return { transferId: t.id, from: t.from, to: t.to, amount: t.amount };
}
