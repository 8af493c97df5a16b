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
import type { TransferJobSink } from '../../src/domain/transfer-jobs.ts';
import type { LuaScript } from '../../src/store/lua-script.ts';

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
    options?: Partial<EnqueueOptions> & {
      validate?: ValidateOptions;
      config?: Config;
      now?: () => number;
      /** The Redis the enqueue writes through, made from the harness's (a producer that crashes). */
      redis?: (redis: Redis) => Redis;
      /** The job sink the enqueue adds through, made from the harness's producer (one that fails). */
      jobs?: (producer: Producer) => TransferJobSink;
    },
  ): Promise<EnqueueOutcome>;
  close(): Promise<void>;
};

/** A producer that died: the error the wrapper below throws in its place. */
export class SimulatedCrashError extends Error {
  override name = 'SimulatedCrashError';
}

/**
 * `redis`, but a call of `script` after its first `runs` throws (nothing sent): what a producer that
 * dies mid-enqueue leaves behind, whatever the product's own code would have done next.
 */
export function crashingAfter(redis: Redis, script: LuaScript, runs: number): Redis {
  let n = 0;
  return new Proxy(redis, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (prop !== 'evalsha' && prop !== 'eval')
        return typeof value === 'function' ? value.bind(target) : value;
      return (first: string, ...rest: unknown[]) => {
        const ours = first === script.sha || first === script.text;
        if (ours && n++ >= runs)
          return Promise.reject(new SimulatedCrashError('simulated crash mid-enqueue'));
        return (value as (...a: unknown[]) => Promise<unknown>).call(target, first, ...rest);
      };
    },
  });
}

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
      const { redis: through, jobs, validate: _validate, config: _config, now, ...enqueueOptions } = options;
      const deps = {
        redis: through ? through(redis) : redis,
        prefix,
        jobs: jobs ? jobs(producer) : producer,
        config,
        ...(now ? { now } : {}),
      };
      return await enqueueValidated(deps, input, { source: 'csv', actor: 'cli:test', ...enqueueOptions });
    },
    async close() {
      await producer.close();
      redis.disconnect();
    },
  };
}
