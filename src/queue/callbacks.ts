import { createHmac } from 'node:crypto';
import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Config } from '../config/config.ts';
import type { Logger } from '../log/logger.ts';
import { createBatchReader } from '../store/batch-reader.ts';
import { keys } from '../store/keys.ts';
import { isCallbackAllowed } from '../domain/callback-url.ts';

const QUEUE = 'callbacks';

/** `X-Signature: t=<unix s>,v1=<hex HMAC-SHA256 of "t.body">`, as the hook itself requires. */
export function signatureHeader(secret: string, body: string, nowMs: number = Date.now()): string {
  const t = Math.floor(nowMs / 1000);
  const v1 = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
  return `t=${t},v1=${v1}`;
}

/**
 * One signed POST of the batch's final status document to its `callback_url` per completion
 * (`generation`), retried with exponential backoff by the queue.
 */
export function createCallbackSender(deps: {
  redisUrl: string;
  prefix: string;
  redis: Redis;
  config: Config;
  logger: Logger;
  fetch?: typeof fetch;
}) {
  const connection = { url: deps.redisUrl, maxRetriesPerRequest: null };
  const queue = new Queue(QUEUE, { connection, prefix: deps.prefix });
  queue.on('error', (err) => deps.logger.warn({ err: { message: err.message } }, 'callback queue error'));
  const reader = createBatchReader({ redis: deps.redis, prefix: deps.prefix });
  const k = keys(deps.prefix);
  const doFetch = deps.fetch ?? fetch;

  const worker = new Worker(
    QUEUE,
    async (job: Job) => {
      const { batchId, generation } = job.data as { batchId: string; generation: number };
      const url = await deps.redis.hget(k.batch(batchId), 'callback_url');
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
      if (secret) headers['x-signature'] = signatureHeader(secret, body);
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
    async completed(batchId: string, generation: number): Promise<void> {
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
    },
    async close(): Promise<void> {
      await worker.close();
      await queue.close();
    },
  };
}
