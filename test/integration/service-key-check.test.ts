import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';
import { startStack, type Stack } from '../helpers/e2e.ts';
import { csvOf, mixedRows, randomEvmAddress } from '../helpers/fixtures.ts';

/*
 * Issue 35, finding 1: with a wrong TRANSFER_API_KEY the worker logged "worker started" and then
 * every row failed `estimate_refused … HTTP 401`; `enqueue --dry-run` printed one identical line per
 * row and never named the variable. The key is now checked once: the worker's start (one estimate
 * of the smallest amount) and a dry run's first refusal exit 2, naming TRANSFER_API_KEY.
 */

const KEY_LINE = /^error: TRANSFER_API_KEY: the transfer service refused it \(HTTP 40[13] on estimate\)/;

/** Lines on stderr that are not log records. */
const said = (stderr: string) => stderr.split('\n').filter((l) => l !== '' && !l.startsWith('{'));

describe('a wrong TRANSFER_API_KEY is found before any row fails', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('the worker checks it once at start and exits 2 naming the variable; no row is touched', async () => {
    const { batchId } = await stack.enqueue(mixedRows(3, 'key'));
    const wrong = await runCli(['worker'], { ...stack.env, TRANSFER_API_KEY: 'sk_wrong_key_0123' });
    expect(wrong.code, wrong.stderr).toBe(2);
    // One line: the check's own call is not logged as a failure besides.
    expect(wrong.stderr.trim().split('\n')).toEqual([expect.stringMatching(KEY_LINE)]);
    expect(wrong.stderr).not.toContain('sk_wrong_key_0123');
    const untouched = await stack.status(batchId);
    expect(untouched.counts).toMatchObject({ queued: 3, in_progress: 0, failed: 0 });
    expect(untouched.transfers.every((t) => t.attempts === 0 && t.error === null)).toBe(true);
    // With the right key the same rows are paid: nothing was used up.
    const worker = stack.startWorker();
    try {
      expect((await stack.waitComplete(batchId, 60_000)).counts.submitted).toBe(3);
      // Its start's estimate of 0.000001 USDC, which the sandbox refuses as below its fee, showed the
      // key accepted and is not logged as a failure (a warning at every start would be noise).
      expect(worker.output()).not.toMatch(/service call failed/);
    } finally {
      await worker.stop();
    }
  });

  it('enqueue --dry-run stops at the first refusal with one line naming the variable (exit 2)', async () => {
    const rows = Array.from({ length: 40 }, (_, i) => ({
      id: `dry-${i}`,
      from: 'BASE',
      to: 'ARB',
      amount: `${i + 1}.00`,
      recipient: randomEvmAddress(),
    }));
    const file = join(stack.dir, 'dry-key.csv');
    writeFileSync(file, csvOf(rows));
    for (const flags of [[], ['--json']]) {
      const run = await runCli(['enqueue', file, '--dry-run', ...flags], {
        ...stack.env,
        TRANSFER_API_KEY: 'sk_wrong_key_0123',
      });
      expect(run.code, run.stderr).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr.trim().split('\n')).toEqual([expect.stringMatching(KEY_LINE)]);
    }
  });
});

describe('enqueue --dry-run against a service that refuses the key', () => {
  let server: Server;
  let calls = 0;
  let url = '';
  beforeAll(async () => {
    // Answers every estimate 403, as a service that knows the key but not its rights would.
    server = createServer((req, res) => {
      calls++;
      req.resume();
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 403, message: 'forbidden' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it('asks once: 200 rows, one estimate', async () => {
    const rows = Array.from({ length: 200 }, (_, i) => ({
      id: `r-${i}`,
      from: 'ETH',
      to: 'BASE',
      amount: '1.00',
      recipient: randomEvmAddress(),
    }));
    const dir = mkdtempSync(join(tmpdir(), 'usdc-key-'));
    try {
      writeFileSync(join(dir, 'rows.csv'), csvOf(rows));
      const run = await runCli(['enqueue', join(dir, 'rows.csv'), '--dry-run'], {
        TRANSFER_API_URL: url,
        TRANSFER_API_KEY: 'sk_forbidden_0123',
        // No Redis is needed by a dry run: one that does not answer is only not read.
        REDIS_URL: 'redis://127.0.0.1:9',
      });
      expect(run.code, run.stderr).toBe(2);
      expect(said(run.stderr)).toEqual([expect.stringMatching(KEY_LINE)]);
      expect(calls).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
