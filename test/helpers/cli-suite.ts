import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { redisForSuite, type SuiteRedis } from './redis.ts';

/** What a suite that runs the CLI against its own Redis needs: set up in beforeAll, removed after. */
export type CliSuite = {
  /** The suite's Redis (its URL goes into the CLI's environment). */
  readonly suite: SuiteRedis;
  /** A client on it, for checking what the CLI wrote. */
  readonly redis: Redis;
  /** A scratch directory for input files. */
  readonly dir: string;
  /** The environment of a CLI run on the suite's Redis under `prefix`. */
  env(prefix: string, extra?: Record<string, string>): Record<string, string>;
  /** Writes a file into `dir`; returns its path. */
  write(name: string, content: string | Buffer): string;
};

/** Registers the suite's beforeAll/afterAll and returns accessors valid inside its tests. */
export function useCliSuite(dirPrefix: string): CliSuite {
  let suite: SuiteRedis | undefined;
  let redis: Redis | undefined;
  let dir: string | undefined;
  beforeAll(async () => {
    suite = await redisForSuite();
    redis = new Redis(suite.url);
    dir = mkdtempSync(join(tmpdir(), dirPrefix));
  });
  afterAll(async () => {
    redis?.disconnect();
    await suite?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  const ready = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`${what} is set up in beforeAll: use it inside a test`);
    return value;
  };
  return {
    get suite() {
      return ready(suite, 'suite');
    },
    get redis() {
      return ready(redis, 'redis');
    },
    get dir() {
      return ready(dir, 'dir');
    },
    env(prefix, extra = {}) {
      return { REDIS_URL: ready(suite, 'suite').url, QUEUE_PREFIX: prefix, ...extra };
    },
    write(name, content) {
      const path = join(ready(dir, 'dir'), name);
      writeFileSync(path, content);
      return path;
    },
  };
}
