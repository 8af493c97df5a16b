import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';
import SlowFirstSequencer from './scripts/slow-first.ts';

export default defineConfig({
  test: {
    // The usual output, then the ten slowest files of a run of many (scripts/test-times.ts; CI
    // prints it after `npm test`, docs/development.md keeps a quiet run's list).
    reporters: ['default', './scripts/test-times.ts'],
    // The slowest files start first (test/slow-files.json), so the lanes end together.
    sequence: { sequencer: SlowFirstSequencer },
    // Node's compile cache (the directory bin/usdc-batch.js uses too) for vitest's workers and the
    // processes tests start with their environment: each file's import of the dependencies
    // (BullMQ, viem, …) and each TypeScript helper process skip compiling what an earlier one did.
    env: { NODE_COMPILE_CACHE: process.env['NODE_COMPILE_CACHE'] ?? join(tmpdir(), 'node-compile-cache') },
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          testTimeout: 20_000,
          // Every core: vitest's default is one fewer, which on 2 cores is one, and a project of one
          // worker runs as a sequential group after every other project (the whole unit suite on
          // one core, after the integration suites).
          maxWorkers: '100%',
          // The unit files share each worker's module cache (no fresh import of viem, BullMQ, … per
          // file): 30 s instead of 55 s of wall time, 41 instead of 65 CPU seconds on 2 cores. They
          // hold no state between files (no mocks, no globals); a file that needs a fresh module
          // graph belongs in the integration project.
          isolate: false,
          // First, before any stack starts: a broken unit shows in `npm test` within the minute.
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts'],
          testTimeout: 120_000,
          // A suite's set-up starts Redis, the sandbox (four anvils), serve and workers: on a
          // busy machine that alone has taken over a minute. An overall bound, not a wait: a
          // set-up that is ready sooner goes on at once.
          hookTimeout: 180_000,
          // Integration suites start their own redis-server and sandbox processes. Five files at a
          // time on 2 cores: the slowest files spend much of their time waiting out the product's
          // own timers (a dead worker's locks and leases, a failover), not on the CPU, and they
          // start first (test/slow-files.json), side by side. On the 2-core machine of 1 December
          // 2026, four lanes ran npm test in 587 s with the cores 80 % busy, idle for minutes while
          // the four slowest files waited together; five, 528–567 s with the cores ~98 % busy.
          // Earlier machines: three lanes 639 s, four 532 s (30 November); docs/development.md.
          maxWorkers: 5,
          fileParallelism: true,
          // After the unit files (same worker count, so vitest needs the order said).
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
