import type { QueueOptions, RedisOptions as QueueConnection } from 'bullmq';
import { endpointOptions, openConnection, type RedisEndpoint } from '../store/redis-endpoint.ts';

/**
 * Entries kept in each queue's `…:events` stream. Nothing of ours reads the streams (no
 * QueueEvents: bull-board, the CLI and the API read job hashes and our own records; the producer's
 * transfer jobs add none: job-hash.ts addWaitingJobs), so BullMQ's
 * default of 10,000 only held about 2.5 KiB per transfer of a batch below that cap. A hundred
 * recent events (up to about twice that: BullMQ trims with `MAXLEN ~`, a whole stream node at a
 * time) stay for anyone watching a queue live (`XREAD` on the stream from its end). Every Queue we
 * open sets it, since each writes it into the queue's meta and the workers' scripts read it there.
 */
export const EVENTS_KEPT = 100;

/** A queue's options: the connection and prefix given, and our events cap (docs/data-model.md). */
export function queueOptions(connection: QueueOptions['connection'], prefix: string): QueueOptions {
  return { connection, prefix, streams: { events: { maxLen: EVENTS_KEPT } } };
}

/** A worker's BullMQ connection, and how to let go of it once its queues and workers closed. */
export type WorkerConnection = {
  readonly connection: QueueOptions['connection'];
  close(): Promise<void>;
};

/**
 * A worker's own BullMQ connection (its blocking one, and each Worker's): the endpoint's options
 * with `maxRetriesPerRequest: null`, BullMQ's production setting (a command waits through a Redis
 * restart or a failover instead of failing the job). Options make BullMQ open a connection per
 * Queue and Worker, closed with them. On a Redis Cluster (REDIS_CLUSTER_NODES) BullMQ takes only a
 * client: one Cluster client shared by the Queues and Workers given it (each Worker duplicates it
 * for its blocking connection), closed by `close` after them.
 */
export function workerConnection(
  endpoint: RedisEndpoint,
  extra: Record<string, unknown> = {},
): WorkerConnection {
  if (endpoint.redisClusterNodes) {
    const client = openConnection(endpoint, { maxRetriesPerRequest: null, ...extra }, { waitFailover: true });
    client.on('error', () => {});
    return {
      connection: client,
      close: async () => {
        await client.quit().catch(() => client.disconnect());
      },
    };
  }
  // BullMQ hands these to ioredis as they are: its RedisOptions type is ioredis's, loosened.
  const options = endpointOptions(endpoint) as QueueConnection;
  return { connection: { ...options, maxRetriesPerRequest: null, ...extra }, close: async () => {} };
}
