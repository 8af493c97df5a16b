import type { Chain } from './chains.ts';

/*
 * The hand-off of a transfer to the queue, as those who hand it over see it: ingest, approve, retry,
 * the schedules and rebalancing add jobs through a TransferJobSink, which src/queue/producer.ts
 * implements (names, ids and queues of the jobs: src/queue/jobs.ts).
 */

/**
 * One transfer's job: its queue is its source chain; its destination and amount name the job
 * (`BASE→ARB 125.00 USDC`), so bull-board says what each job pays.
 */
export type TransferJobSpec = {
  readonly transferId: string;
  readonly from: Chain;
  readonly to?: Chain | undefined;
  readonly amount?: bigint | undefined;
};

/** Adds one job per transfer; implemented by src/queue/producer.ts. */
export type TransferJobSink = {
  addTransfers(batchId: string, transfers: readonly TransferJobSpec[], round?: number): Promise<void>;
  /**
   * An operator's action completed the batch (`generation`: its completion count): its completion
   * callback goes out as when a worker completes it. Absent: nothing is announced (tools, tests).
   */
  batchCompleted?(batchId: string, generation: number): Promise<void>;
};
