import type { Redis } from 'ioredis';

/** A BullMQ job as it lies in Redis (`<prefix>:<queue>:<id>` and its `:logs` list), read with a plain client. */
export type StoredJob = {
  readonly queue: string;
  readonly id: string;
  readonly key: string;
  readonly hash: Record<string, string>;
  readonly logs: string[];
  /** Which of the queue's finished sets holds it, if any. */
  readonly finished: 'completed' | 'failed' | null;
};

export async function readJob(client: Redis, prefix: string, queue: string, id: string): Promise<StoredJob> {
  const key = `${prefix}:${queue}:${id}`;
  const [hash, logs, completed, failed] = await Promise.all([
    client.hgetall(key),
    client.lrange(`${key}:logs`, 0, -1),
    client.zscore(`${prefix}:${queue}:completed`, id),
    client.zscore(`${prefix}:${queue}:failed`, id),
  ]);
  return {
    queue,
    id,
    key,
    hash,
    logs,
    finished: completed !== null ? 'completed' : failed !== null ? 'failed' : null,
  };
}

/** Every key of a prefix's BullMQ queues whose name matches, with its content as text (hashes, lists, strings). */
export async function dumpQueueKeys(
  client: Redis,
  prefix: string,
  queues: readonly string[],
): Promise<string> {
  const parts: string[] = [];
  for (const queue of queues) {
    let cursor = '0';
    do {
      const [next, found] = await client.scan(cursor, 'MATCH', `${prefix}:${queue}:*`, 'COUNT', 1000);
      cursor = next;
      for (const key of found) {
        const type = await client.type(key);
        if (type === 'hash') parts.push(key, JSON.stringify(await client.hgetall(key)));
        else if (type === 'list') parts.push(key, ...(await client.lrange(key, 0, -1)));
        else if (type === 'string') parts.push(key, (await client.get(key)) ?? '');
        else if (type === 'stream') {
          const entries = await client.xrange(key, '-', '+');
          parts.push(key, JSON.stringify(entries));
        }
      }
    } while (cursor !== '0');
  }
  return parts.join('\n');
}
