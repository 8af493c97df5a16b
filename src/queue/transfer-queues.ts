import { Queue, type QueueOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Chain } from '../domain/chains.ts';
import { queueNameFor } from './jobs.ts';
import { queueOptions } from './queue-options.ts';

/** The transfer queues a process opens as it first needs them: one per source chain, one connection. */
export type TransferQueues = {
  of(source: Chain): Queue;
  close(): Promise<void>;
};

/**
 * Opens each source chain's transfer queue on first use. `extra` is read then, at each queue's
 * opening (the producer's telemetry, which tracing may have started since). Errors reach the caller
 * of each call; a queue's 'error' event is only kept from crashing the process.
 */
export function openTransferQueues(
  connection: Redis,
  prefix: string,
  extra: () => Partial<QueueOptions> = () => ({}),
): TransferQueues {
  const queues = new Map<Chain, Queue>();
  return {
    of(source) {
      let q = queues.get(source);
      if (!q) {
        q = new Queue(queueNameFor(source), { ...queueOptions(connection, prefix), ...extra() });
        q.on('error', () => {});
        queues.set(source, q);
      }
      return q;
    },
    async close() {
      await Promise.all([...queues.values()].map((q) => q.close()));
      queues.clear();
    },
  };
}
