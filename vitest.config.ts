import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          testTimeout: 20_000,
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
          // Integration suites start their own redis-server and sandbox processes; on 2 cores,
          // two files at a time keeps them from starving each other.
          maxWorkers: 2,
          fileParallelism: true,
        },
      },
    ],
  },
});
