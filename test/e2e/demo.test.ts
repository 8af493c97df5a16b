import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';
import { processAlive } from '../helpers/sandbox.ts';

const micro = (decimal: string): bigint => {
  const negative = decimal.startsWith('-');
  const [w = '0', f = ''] = decimal.replace(/^[-+]/, '').split('.');
  const v = BigInt(w) * 1_000_000n + BigInt(f.padEnd(6, '0'));
  return negative ? -v : v;
};

/**
 * The balances the demo printed, which it read from the chains (anvil, LiteSVM) before and after:
 * each treasury paid exactly its rows' amounts, each recipient received exactly its row's amount
 * less the fee the summary table shows.
 */
function expectChainBalances(stdout: string): void {
  const rows = [...stdout.matchAll(/^(\S+)\s+(\w+)→(\w+)\s+([0-9.]+)\s+([0-9.]+)\s+submitted/gm)].map(
    (m) => ({
      id: m[1] as string,
      from: m[2] as string,
      to: m[3] as string,
      amount: micro(m[4] as string),
      fee: micro(m[5] as string),
    }),
  );
  expect(rows).toHaveLength(8);
  const balances = [
    ...stdout.matchAll(
      /^(treasury|recipient of \S+)\s+(\w+)\s+\S+\s+([0-9.]+)\s+([0-9.]+)\s+([-+][0-9.]+)$/gm,
    ),
  ].map((m) => ({
    who: m[1] as string,
    chain: m[2] as string,
    before: micro(m[3] as string),
    after: micro(m[4] as string),
  }));
  for (const chain of new Set(rows.map((r) => r.from))) {
    const paid = rows.filter((r) => r.from === chain).reduce((n, r) => n + r.amount, 0n);
    const t = balances.find((b) => b.who === 'treasury' && b.chain === chain);
    expect(t && t.before - t.after, `treasury on ${chain}`).toBe(paid);
  }
  for (const r of rows) {
    const b = balances.find((x) => x.who === `recipient of ${r.id}`);
    expect(b?.chain).toBe(r.to);
    expect(b && b.after - b.before, `recipient of ${r.id}`).toBe(r.amount - r.fee);
  }
}

/**
 * The demo's move through CCTP: minted (`complete`), its intent the burn, and the chains' balances
 * moved by it: the treasury's BASE down by the amount, its ARB up by the amount less Circle's fee.
 */
function expectCctpMove(text: string): void {
  expect(text).toMatch(/through Circle's CCTP v2 \(cctp-fast\)/);
  const row =
    /^rb-BASE-ARB\s+BASE→ARB\s+([0-9.]+)\s+([0-9.]+)\s+submitted\s+cctp:6:(0x[0-9a-f]{64})\s+complete\s+(0x[0-9a-f]{64})$/m.exec(
      text,
    );
  expect(row, text).not.toBeNull();
  const [, amount = '', fee = '', burn, tx] = row ?? [];
  expect(burn).toBe(tx);
  const lines = [
    ...text.matchAll(/^(treasury|recipient of \S+)\s+(\w+)\s+\S+\s+([0-9.]+)\s+([0-9.]+)\s+([-+][0-9.]+)$/gm),
  ];
  const delta = (who: string, chain: string) => {
    const m = lines.find((l) => l[1] === who && l[2] === chain);
    expect(m, `${who} on ${chain}`).toBeDefined();
    return micro(m?.[4] ?? '0') - micro(m?.[3] ?? '0');
  };
  expect(delta('treasury', 'BASE')).toBe(-micro(amount));
  expect(delta('recipient of rb-BASE-ARB', 'ARB')).toBe(micro(amount) - micro(fee));
}

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
      // Under a minute on a quiet machine; the bound is generous for a busy one (the demo starts
      // Redis, four anvils, LiteSVM and a worker).
      const res = await runCli(['demo'], { REDIS_URL: undefined }, { cwd: dir, timeoutMs: 280_000 });
      expect(res.code, res.stderr).toBe(0);
      expect(res.stdout).toMatch(/started a private, durable Redis/);
      expect(res.stdout.match(/submitted\s+int_/g)?.length).toBe(8);
      expect(res.stdout).toMatch(/submitted 8, failed 0, rejected 0, needs_review 0/);
      // Each row shows its intent's status and its source transaction, whole (stdout is a pipe).
      const rows = [...res.stdout.matchAll(/submitted\s+int_\S+\s+(\w+)\s+(\S+)$/gm)];
      expect(rows).toHaveLength(8);
      for (const [, intentStatus, tx] of rows) {
        expect(['pending', 'detected', 'minted', 'complete']).toContain(intentStatus);
        expect(tx).toMatch(/^(0x[0-9a-f]{64}|[1-9A-HJ-NP-Za-km-z]{64,88})$/);
      }
      expect(res.stdout).not.toContain('…');
      // Not a terminal: no progress bar redrawn with carriage returns, plain progress lines instead.
      expect(res.stderr).not.toContain('\r');
      expect(res.stderr).toMatch(/^progress: 8\/8 transfers finished$/m);
      // The last line says where to look next.
      expect(res.stdout.trimEnd().split('\n').at(-1)).toMatch(/^next: .*usdc-batch status/);
      // The private redis-server (its process title is `redis-server 127.0.0.1:<port>`) is gone,
      // and so is anything else that named the demo's temp dir.
      const port = /redis:\/\/127\.0\.0\.1:([0-9]+)/.exec(res.stdout)?.[1];
      expect(port).toBeDefined();
      expect(processesMentioning(`127.0.0.1:${port}`)).toEqual([]);
      await expect(canConnect(Number(port))).resolves.toBe(false);
      expect(processesMentioning('usdc-batch-demo-')).toEqual(before);
      // The anvil behind each EVM chain is gone too.
      const anvilPids = [...res.stdout.matchAll(/anvil pid ([0-9]+)/g)].map((m) => Number(m[1]));
      expect(anvilPids).toHaveLength(4);
      expect(anvilPids.filter(processAlive)).toEqual([]);
      // The service's sample, then the second road's move (its own table and balances).
      const [serviceRoad = '', cctpRoad = ''] = res.stdout.split(/^the second road: /m);
      expectChainBalances(serviceRoad);
      expectCctpMove(cctpRoad);
      // No secret is printed: the throwaway EVM key is 32 random bytes, never shown (the only
      // 32-byte hex values printed are the transactions' hashes of the table).
      const hashes = new Set([
        ...rows.map((r) => r[2]),
        ...[...cctpRoad.matchAll(/0x[0-9a-f]{64}/g)].map((m) => m[0]),
      ]);
      const shown = [...(res.stdout + res.stderr).matchAll(/0x[0-9a-f]{64}/g)].map((m) => m[0]);
      expect(shown.filter((h) => !hashes.has(h))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);
});
