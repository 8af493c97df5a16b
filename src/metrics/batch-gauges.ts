import { Gauge } from 'prom-client';
import { microValue, SCRAPED_BATCHES, type Snapshot } from './scrape-snapshot.ts';

/** Transfers, batches and amounts of the most recent batches, and the queues' jobs. */
export function createBatchGauges() {
  return {
    transfers: new Gauge({
      name: 'usdc_batch_transfers',
      help: `Transfers by state, over the ${SCRAPED_BATCHES} most recent batches.`,
      labelNames: ['state'],
      registers: [],
    }),
    batches: new Gauge({
      name: 'usdc_batch_batches',
      help: `The ${SCRAPED_BATCHES} most recent batches by status (held, open, complete).`,
      labelNames: ['status'],
      registers: [],
    }),
    amounts: new Gauge({
      name: 'usdc_batch_amount_micro_usdc',
      help: `Sums over the ${SCRAPED_BATCHES} most recent batches, micro-USDC: requested amount, estimated fee, net received.`,
      labelNames: ['kind'],
      registers: [],
    }),
    queueJobs: new Gauge({
      name: 'usdc_batch_queue_jobs',
      help: 'Jobs per queue and job state.',
      labelNames: ['queue', 'state'],
      registers: [],
    }),
    queueDepth: new Gauge({
      name: 'usdc_batch_queue_depth',
      help: 'Jobs still to run per queue (waiting + prioritized + delayed).',
      labelNames: ['queue'],
      registers: [],
    }),
  };
}
export type BatchGauges = ReturnType<typeof createBatchGauges>;

export function fillBatchGauges(g: BatchGauges, snap: Snapshot): void {
  for (const [state, n] of snap.transfers) g.transfers.set({ state }, n);
  for (const [status, n] of snap.batches) g.batches.set({ status }, n);
  for (const [kind, v] of snap.amounts) g.amounts.set({ kind }, microValue(v));
  g.queueJobs.reset();
  g.queueDepth.reset();
  for (const { queue, counts } of snap.queues) {
    for (const [state, n] of Object.entries(counts)) g.queueJobs.set({ queue, state }, n);
    g.queueDepth.set({ queue }, counts.waiting + counts.prioritized + counts.delayed);
  }
}
