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
          hookTimeout: 60_000,
          // Integration suites start their own redis-server and sandbox processes; on 2 cores,
          // two files at a time keeps them from starving each other.
          maxWorkers: 2,
          fileParallelism: true,
        },
      },
    ],
  },
});
