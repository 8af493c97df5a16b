import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';
import { csvOf, randomEvmAddress, TEST_EVM_KEY } from '../helpers/fixtures.ts';
import { freePort } from '../helpers/redis.ts';

// Nothing listens on this port: every command meets a Redis that cannot be reached.
const port = await freePort();
const PASSWORD = 'hunter2-redis-password';
const env = {
  REDIS_URL: `redis://ops:${PASSWORD}@127.0.0.1:${port}`,
  TRANSFER_API_URL: 'http://127.0.0.1:9',
  TRANSFER_API_KEY: 'sk_test_unreachable',
  EVM_PRIVATE_KEY: TEST_EVM_KEY,
  PERMIT_SPENDER: randomEvmAddress(),
  HOOK_TOKEN: 'hook-token-long-enough-1234',
};
const dir = mkdtempSync(join(tmpdir(), 'usdc-unreachable-'));
const csv = join(dir, 'payouts.csv');
writeFileSync(
  csv,
  csvOf([{ id: 'a1', from: 'BASE', to: 'ARB', amount: '1.00', recipient: randomEvmAddress() }]),
);

const COMMANDS: string[][] = [
  ['enqueue', csv],
  ['status', 'b1'],
  ['batches'],
  ['export', 'b1'],
  ['retry', 'b1'],
  ['resolve', 'b1', 't1', '--not-sent'],
  ['approve', 'b1'],
  ['cancel', 'b1'],
  ['pause'],
  ['resume'],
  ['audit'],
  ['schedule', 'list'],
  ['worker'],
  ['serve'],
];

describe.concurrent('a Redis that cannot be reached', () => {
  it.each(COMMANDS.map((c) => [c.join(' '), c] as const))(
    '`%s` says so in one line naming REDIS_URL and its scheme, host and port, never the user or password, and exits 2',
    async (_name, args) => {
      const r = await runCli(args, env, { timeoutMs: 30_000 });
      expect(r.code).toBe(2);
      const lines = r.stderr.trim().split('\n');
      expect(lines).toEqual([
        `error: cannot reach Redis at redis://127.0.0.1:${port} (REDIS_URL): is redis-server running there?`,
      ]);
      expect(r.stdout + r.stderr).not.toContain(PASSWORD);
      expect(r.stdout + r.stderr).not.toContain('ops');
      expect(r.stdout + r.stderr).not.toContain('maxRetriesPerRequest');
    },
  );
});
