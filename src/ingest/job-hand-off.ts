import type { TransferRequest } from '../domain/transfer.ts';
import type { QueuedRowsSink, TransferJobSink, TransferJobSpec } from '../store/batch-writer.ts';

/**
 * Where a row becomes a job: the batch writer hands over each chunk of rows it has written and left
 * `queued` (a held batch's rows wait for approval), and each gets one job on its source chain's
 * queue, named by its destination and amount; the job id comes from the transfer id, so a re-run
 * adds none twice (src/queue/producer.ts).
 */
export function handOffToJobs(jobs: TransferJobSink): QueuedRowsSink {
  return (batchId, rows) => jobs.addTransfers(batchId, rows.map(jobSpecOf));
}

export function jobSpecOf(t: TransferRequest): TransferJobSpec {
  return { transferId: t.id, from: t.from, to: t.to, amount: t.amount };
}
