import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';

function processesMentioning(text: string): string[] {
  const out = execFileSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' });
  return out.split('\n').filter((l) => l.includes(text) && !l.includes('ps -eo'));
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('usdc-batch demo', () => {
  it('runs in an empty directory with a clean environment, shows submitted transfers, and leaves no process behind', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'usdc-demo-cwd-'));
    try {
      const before = processesMentioning('usdc-batch-demo-');
      const res = await runCli(['demo'], { REDIS_URL: undefined }, { cwd: dir, timeoutMs: 120_000 });
      expect(res.code, res.stderr).toBe(0);
      expect(res.stdout).toMatch(/started a private, durable Redis/);
      expect(res.stdout.match(/submitted\s+int_/g)?.length).toBe(8);
      expect(res.stdout).toMatch(/submitted 8, failed 0, rejected 0, needs_review 0/);
      // The private redis-server (its process title is `redis-server 127.0.0.1:<port>`) is gone,
      // and so is anything else that named the demo's temp dir.
      const port = /redis:\/\/127\.0\.0\.1:([0-9]+)/.exec(res.stdout)?.[1];
      expect(port).toBeDefined();
      expect(processesMentioning(`127.0.0.1:${port}`)).toEqual([]);
      await expect(canConnect(Number(port))).resolves.toBe(false);
      expect(processesMentioning('usdc-batch-demo-')).toEqual(before);
      // No secret is printed: the throwaway EVM key is 32 random bytes, never shown.
      expect(res.stdout + res.stderr).not.toMatch(/0x[0-9a-f]{64}/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
