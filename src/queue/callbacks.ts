import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Config } from '../config/config.ts';
import type { Logger } from '../log/logger.ts';
import { createBatchReader } from '../present/batch-status.ts';
import { readCallbackUrl } from '../store/batch-record.ts';
import { isCallbackAllowed } from '../domain/callback-url.ts';
import { signRequest } from '../domain/request-signature.ts';
import { queueOptions, workerConnection } from './queue-options.ts';
import type { RedisEndpoint } from '../store/redis-endpoint.ts';

export const CALLBACK_QUEUE = 'callbacks';
const QUEUE = CALLBACK_QUEUE;

/**
 * The batch completed (its `generation`-th time): a callback job on `queue` only when the batch has
 * a `callback_url` (a batch without one would leave a job that does nothing in the queue). The job
 * id names the completion, so however many processes announce it, one POST goes out.
 */
export async function addCompletionCallback(
  queue: Queue,
  redis: Redis,
  prefix: string,
  batchId: string,
  generation: number,
): Promise<void> {
  if (!(await readCallbackUrl(redis, prefix, batchId))) return;
  await queue.add(
    'completed',
    { batchId, generation },
    {
      jobId: `${batchId}/cb${generation}`,
      attempts: 10,
      backoff: { type: 'exponential', delay: 2_000 },
      removeOnComplete: { age: 7 * 24 * 3600 },
      removeOnFail: { age: 30 * 24 * 3600 },
    },
  );
}

/** `X-Signature: t=<unix s>,v1=<hex HMAC-SHA256 of "t.body">`: a body sent to a target without a query. */
export function signatureHeader(secret: string, body: string, nowMs: number = Date.now()): string {
  return signRequest(secret, { method: 'POST', target: '/', body }, nowMs);
}

/**
 * One signed POST of the batch's final status document to its `callback_url` per completion
 * (`generation`), retried with exponential backoff by the queue.
 */
export function createCallbackSender(deps: {
  endpoint: RedisEndpoint;
  prefix: string;
  redis: Redis;
  config: Config;
  logger: Logger;
  fetch?: typeof fetch;
}) {
  const { connection, close: closeConnection } = workerConnection(deps.endpoint);
  const queue = new Queue(QUEUE, queueOptions(connection, deps.prefix));
  queue.on('error', (err) => deps.logger.warn({ err: { message: err.message } }, 'callback queue error'));
  const reader = createBatchReader({ redis: deps.redis, prefix: deps.prefix });
  const doFetch = deps.fetch ?? fetch;

  const worker = new Worker(
    QUEUE,
    async (job: Job) => {
      const { batchId, generation } = job.data as { batchId: string; generation: number };
      const url = await readCallbackUrl(deps.redis, deps.prefix, batchId);
      // A job added by older code for a batch without a callback.
      if (!url) return 'no_callback';
      if (!isCallbackAllowed(url, deps.config.callbackAllowedHosts)) {
        deps.logger.warn({ batchId }, 'callback host is not allowed; not sending');
        return 'not_allowed';
      }
      const doc = await reader.status(batchId);
      if (!doc) return 'no_batch';
      const body = JSON.stringify({ ...doc, generation });
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      const secret = deps.config.hookHmacSecret?.reveal();
      // Signed as the hook requires: v2 (method, path and query) when the URL has a query string.
      if (secret) {
        headers['x-signature'] = signRequest(secret, { method: 'POST', target: requestTarget(url), body });
      }
      const res = await doFetch(url, {
        method: 'POST',
        headers,
        body,
        redirect: 'manual',
        signal: AbortSignal.timeout(10_000),
      });
      if (res.status < 200 || res.status >= 300) throw new Error(`callback answered HTTP ${res.status}`);
      return 'sent';
    },
    { connection, prefix: deps.prefix, concurrency: 4 },
  );
  worker.on('error', (err) => deps.logger.warn({ err: { message: err.message } }, 'callback worker error'));
  worker.on('failed', (job, err) =>
    deps.logger.warn(
      { batchId: (job?.data as { batchId?: string })?.batchId, err: { message: err.message } },
      'callback failed',
    ),
  );

  return {
    /** The batch completed (its `generation`-th time): see addCompletionCallback. */
    async completed(batchId: string, generation: number): Promise<void> {
      await addCompletionCallback(queue, deps.redis, deps.prefix, batchId, generation);
    },
    async close(): Promise<void> {
      await worker.close();
      await queue.close();
      await closeConnection();
    },
  };
}

/** The request target fetch sends for `url`: its path and query, as the URL serialises them. */
function requestTarget(url: string): string {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
}
