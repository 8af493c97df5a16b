import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { Redis } from 'ioredis';
import type { Config } from '../../src/config/config.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import {
  enqueueValidated,
  type EnqueueOptions,
  type EnqueueOutcome,
} from '../../src/ingest/enqueue-batch.ts';
import { validateCsv, type ValidateOptions } from '../../src/ingest/validate-input.ts';
import { createProducer, type Producer } from '../../src/queue/producer.ts';

/** Fixture addresses: valid EIP-55 EVM addresses and 32-byte base58 Solana addresses. */
export const EVM = [
  '0x2F837A1abba5ECe02A82B61C50B1C2385A6DB93c',
  '0xf9908B8d3030ddCf43416EdA9A04c353220Cee45',
  '0xf0971A81d7025f6f8AA7712db209D0780B0240e0',
  '0x2c7405CDE0B47c3841dD61b04a699795C9E96298',
] as const;
export const SOL = [
  'ELJtSAttfEnsme9nKNVcwZ68TuB4x9wb89ubKecUULWx',
  '956rmdbTp3rETFVDUk7qAEJjqxXvTupARnvA87yVgRWR',
] as const;

export const newPrefix = () => `ti${randomBytes(5).toString('hex')}`;

export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({ QUEUE_PREFIX: 'unused', ...env });
}

/** Every key under the prefix: after a rejected input, there must be none. */
export async function keysUnder(redis: Redis, prefix: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    out.push(...found);
  } while (cursor !== '0');
  // What the running processes publish of themselves (their controls) is no request's write.
  return out.filter((k) => k !== `${prefix}:controls`);
}

/** Jobs waiting in the transfer queues of the prefix, per job id. */
export async function jobIds(redis: Redis, prefix: string): Promise<string[]> {
  const ids: string[] = [];
  for (const chain of ['ETH', 'BASE', 'ARB', 'POLYGON', 'SOLANA']) {
    ids.push(...(await redis.lrange(`${prefix}:transfers-${chain}:wait`, 0, -1)));
  }
  return ids;
}

export type IngestHarness = {
  readonly redis: Redis;
  readonly prefix: string;
  readonly producer: Producer;
  enqueue(
    text: string,
    options?: Partial<EnqueueOptions> & { validate?: ValidateOptions; config?: Config; now?: () => number },
  ): Promise<EnqueueOutcome>;
  close(): Promise<void>;
};

/** validateCsv → enqueueValidated with a real producer, against the suite's Redis, under a fresh prefix. */
export function ingestHarness(url: string, prefix = newPrefix()): IngestHarness {
  const redis = new Redis(url, { maxRetriesPerRequest: 2 });
  const producer = createProducer({ connection: url, prefix });
  return {
    redis,
    prefix,
    producer,
    async enqueue(text, options = {}) {
      const config = options.config ?? testConfig();
      const input = await validateCsv(Readable.from([Buffer.from(text)]), {
        maxTransferUsdc: config.maxTransferUsdc,
        allowDuplicates: options.allowDuplicates,
        ...options.validate,
      });
      const deps = { redis, prefix, jobs: producer, config, ...(options.now ? { now: options.now } : {}) };
      return await enqueueValidated(deps, input, {
        source: 'csv',
        actor: 'cli:test',
        ...options,
      });
    },
    async close() {
      await producer.close();
      redis.disconnect();
    },
  };
}
