import { spawn, spawnSync } from 'node:child_process';
import { userInfo } from 'node:os';
import { describe, expect, it } from 'vitest';
import { keys } from '../../src/store/keys.ts';
import { createTransferStore } from '../../src/store/transfer-store.ts';
import { BIN, REPO_ROOT, runCli } from '../helpers/cli.ts';
import { useCliSuite } from '../helpers/cli-suite.ts';
import { EVM, newPrefix } from './ingest-fixtures.ts';

/*
 * Issue 35, "what a newcomer and an operator see is true at first sight": the command line's text
 * and exit codes, each through the real `usdc-batch` entry point on the suite's own Redis (no
 * worker: the transfers stay queued, as in a paused or a held batch).
 */

const cli = useCliSuite('usdc-first-sight-');

/** A CSV of `n` rows BASE → ARB, ids `<tag>-<i>`. */
function csv(tag: string, n: number): string {
  const rows = Array.from(
    { length: n },
    (_, i) => `${tag}-${i + 1},BASE,ARB,${i + 1}.50,${EVM[i % EVM.length]}`,
  );
  return ['id,from,to,amount,recipient', ...rows, ''].join('\n');
}

/** Enqueues `n` rows under a fresh prefix; returns the prefix, its environment and the batch id. */
async function enqueued(tag: string, n: number) {
  const prefix = newPrefix();
  const env = cli.env(prefix);
  const file = cli.write(`${tag}.csv`, csv(tag, n));
  const run = await runCli(['enqueue', file, '--batch-id', `${tag}-batch`], env);
  expect(run.code, run.stderr).toBe(0);
  return { prefix, env, batchId: `${tag}-batch` };
}

describe('not found: every command that names a missing batch, transfer or schedule exits 2', () => {
  it('status, export, retry, cancel, approve, cancel --transfer, resolve and schedule remove agree', async () => {
    const { env, batchId } = await enqueued('nf', 1);
    const cases: [string[], RegExp][] = [
      [['status', 'no-such-batch'], /batch no-such-batch does not exist/],
      [['status', 'no-such-batch', '--json'], /batch no-such-batch does not exist/],
      [['export', 'no-such-batch'], /batch no-such-batch does not exist/],
      [['retry', 'no-such-batch'], /batch no-such-batch does not exist/],
      [['cancel', 'no-such-batch'], /batch no-such-batch does not exist/],
      [['approve', 'no-such-batch'], /batch no-such-batch does not exist/],
      [['cancel', batchId, '--transfer', 'no-such-transfer'], /transfer no-such-transfer is not in batch/],
      [['resolve', batchId, 'no-such-transfer', '--not-sent'], /transfer no-such-transfer is not in batch/],
      [['schedule', 'remove', 'no-such-schedule'], /no schedule named no-such-schedule/],
    ];
    for (const [args, message] of cases) {
      const run = await runCli(args, env);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr, args.join(' ')).toMatch(message);
      expect(run.stdout, args.join(' ')).toBe('');
    }
  });
});

describe('text output says what it means', () => {
  it('status --state with no match says so instead of printing a bare header', async () => {
    const { env, batchId } = await enqueued('nomatch', 2);
    const run = await runCli(['status', batchId, '--state', 'failed'], env);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^no transfers in state failed$/m);
    expect(run.stdout).not.toMatch(/^id\s+line\s+route/m);
    const review = await runCli(['status', batchId, '--state', 'needs_review'], env);
    expect(review.stdout).toMatch(/^no transfers in state needs_review$/m);
  });

  it('counts one of a thing in the singular: 1 transfer, 1 recipient, 1 problem', async () => {
    const { env, batchId } = await enqueued('one', 2);
    const cancel = await runCli(['cancel', batchId, '--transfer', 'one-1'], env);
    expect(cancel.stdout).toMatch(/^cancelled 1 unsent transfer of one-batch: one-1$/m);
    const added = await runCli(['recipients', 'add', EVM[0]], env);
    expect(added.code, added.stderr).toBe(0);
    expect((await runCli(['recipients', 'list'], env)).stdout).toMatch(/^1 recipient$/m);
    const policy = cli.write('one-problem.yaml', 'chains:\n  TRON: { target: 1 }\n');
    const refused = await runCli(['rebalance', policy, '--check'], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/has 1 problem:/);
  });
});

describe('logs: stderr only, JSON or one readable line each (LOG_FORMAT)', () => {
  const PRETTY = /^\d\d:\d\d:\d\d\.\d{3} DEBUG enqueue finished batchId=logs-batch status=enqueued/m;

  it('writes JSON lines to stderr by default off a terminal, and never a log line to stdout', async () => {
    const prefix = newPrefix();
    const file = cli.write('logs.csv', csv('logs', 2));
    const run = await runCli(
      ['enqueue', file, '--batch-id', 'logs-batch'],
      cli.env(prefix, { LOG_LEVEL: 'debug' }),
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).not.toMatch(/"level"|"msg"/);
    const logs = run.stderr.split('\n').filter((l) => l.startsWith('{'));
    expect(logs.map((l) => (JSON.parse(l) as { msg: string }).msg)).toContain('enqueue finished');
  });

  it('writes one readable line per record with LOG_FORMAT=pretty, and by default on a terminal', async () => {
    const prefix = newPrefix();
    const file = cli.write('logs-pretty.csv', csv('logs', 2));
    const env = cli.env(prefix, { LOG_LEVEL: 'debug' });
    const run = await runCli(['enqueue', file, '--batch-id', 'logs-batch'], { ...env, LOG_FORMAT: 'pretty' });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(PRETTY);
    expect(run.stderr).not.toMatch(/^\{/m);
    expect(run.stdout).not.toMatch(/DEBUG|"level"/);
    // On a terminal (`script` gives the command a pseudo-terminal), pretty without being asked.
    const command = [process.execPath, BIN, 'enqueue', file, '--batch-id', 'logs-batch']
      .map((a) => `'${a}'`)
      .join(' ');
    const tty = spawnSync('script', ['-qec', command, '/dev/null'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 60_000,
      env: { PATH: process.env['PATH'], HOME: process.env['HOME'], SHELL: '/bin/sh', ...env },
    });
    expect(tty.status, tty.stdout).toBe(0);
    expect(tty.stdout.replaceAll('\r', '')).toMatch(PRETTY);
    expect(tty.stdout).not.toMatch(/\{"level"/);
  });

  it('refuses an unknown LOG_FORMAT at start, naming it (exit 2)', async () => {
    const run = await runCli(['batches'], cli.env(newPrefix(), { LOG_FORMAT: 'yaml' }));
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/LOG_FORMAT: must be json or pretty/);
  });
});

/**
 * Runs the CLI with its stdout read by a reader that closes the pipe after `lines` lines (0: before
 * anything is written), as `| head -N` does.
 */
async function intoClosingPipe(args: string[], env: Record<string, string>, lines: number) {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: REPO_ROOT,
    env: { PATH: process.env['PATH'], HOME: process.env['HOME'], LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const close = () => child.stdout.destroy();
  if (lines === 0) close();
  else
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (stdout.split('\n').length > lines) close();
    });
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  return { code, stdout, stderr };
}

describe('a reader that closes the pipe early (| head) ends a command quietly, exit 0', () => {
  it('status, status --watch, batches, export and audit', async () => {
    const { env, batchId } = await enqueued('pipe', 3);
    const cases: [string[], number][] = [
      [['status', batchId], 0],
      [['status', batchId, '--json'], 0],
      [['batches'], 0],
      [['export', batchId], 0],
      [['export', batchId, '--format', 'json'], 0],
      [['audit'], 0],
      // Watching a batch that never completes (no worker): it writes every second until the
      // reader goes away after the first screen.
      [['status', batchId, '--watch'], 1],
    ];
    for (const [args, lines] of cases) {
      const run = await intoClosingPipe(args, env, lines);
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(0);
      expect(run.stderr, args.join(' ')).toBe('');
    }
  });
});

describe('a paused system says so: since when and by whom', () => {
  it('pause records since and by; status (text and --json), batches and enqueue say so; resume clears it', async () => {
    const { env, batchId } = await enqueued('pz', 2);
    const actor = `cli:${userInfo().username}`;
    const paused = await runCli(['pause'], env);
    expect(paused.code, paused.stderr).toBe(0);
    const SINCE = `since \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ by ${actor}`;
    expect(paused.stdout).toMatch(new RegExp(`^paused ${SINCE}: workers take no new transfers until`, 'm'));

    const doc = JSON.parse((await runCli(['status', batchId, '--json'], env)).stdout) as {
      paused: { since: string; by: string } | null;
    };
    expect(doc.paused).toEqual({ since: expect.stringMatching(/^\d{4}-.*Z$/), by: actor });
    expect(Date.now() - Date.parse(doc.paused?.since ?? '')).toBeLessThan(10 * 60_000);

    const PAUSED_LINE = new RegExp(
      `^processing is PAUSED ${SINCE}: nothing is sent until \`usdc-batch resume\`$`,
      'm',
    );
    const statusText = (await runCli(['status', batchId], env)).stdout;
    expect(statusText).toMatch(PAUSED_LINE);
    // Each queued row says what it waits for.
    expect(statusText).toMatch(/^pz-1 .* queued .* processing is paused \(usdc-batch resume\)$/m);
    expect((await runCli(['batches'], env)).stdout).toMatch(PAUSED_LINE);
    const listed = JSON.parse((await runCli(['batches', '--json'], env)).stdout) as { paused: unknown };
    expect(listed.paused).toEqual(doc.paused);

    const file = cli.write('pz-more.csv', csv('pz-more', 1));
    const more = await runCli(['enqueue', file], env);
    expect(more.code).toBe(0);
    expect(more.stdout).toMatch(/^batch \S+: enqueued$/m);
    expect(more.stdout).toMatch(
      new RegExp(`^processing is paused ${SINCE}; nothing is sent until \`usdc-batch resume\`$`, 'm'),
    );

    // A second pause changes nothing: the first's time and actor stay, and it is not audited twice.
    const again = await runCli(['pause'], env);
    expect(again.stdout).toMatch(new RegExp(`^already paused ${SINCE}; nothing changed$`, 'm'));
    const second = JSON.parse((await runCli(['status', batchId, '--json'], env)).stdout) as {
      paused: unknown;
    };
    expect(second.paused).toEqual(doc.paused);
    const audit = JSON.parse((await runCli(['audit', '--json'], env)).stdout) as {
      entries: { action: string }[];
    };
    expect(audit.entries.filter((e) => e.action === 'pause')).toHaveLength(1);

    expect((await runCli(['resume'], env)).stdout).toMatch(/^resumed/m);
    const after = JSON.parse((await runCli(['status', batchId, '--json'], env)).stdout) as {
      paused: unknown;
    };
    expect(after.paused).toBeNull();
    expect((await runCli(['status', batchId], env)).stdout).not.toMatch(/PAUSED/);
    expect((await runCli(['resume'], env)).stdout).toMatch(/^not paused; nothing changed$/m);
  });
});

describe('fees not estimated yet are null, never 0.00', () => {
  type Doc = {
    totals: { fee: string | null; net_receive: string | null };
    transfers: { id: string; fee: { total: string } | null; net_receive: string | null }[];
  };

  it('in the status document, the text of status, and export (JSON null, CSV empty) until every transfer that may be sent is estimated', async () => {
    const { env, prefix, batchId } = await enqueued('fee', 3);
    const store = createTransferStore({ redis: cli.redis, prefix });
    const doc = async () => JSON.parse((await runCli(['status', batchId, '--json'], env)).stdout) as Doc;

    const fresh = await doc();
    expect(fresh.totals).toMatchObject({ fee: null, net_receive: null });
    expect(fresh.transfers.map((t) => [t.fee, t.net_receive])).toEqual([
      [null, null],
      [null, null],
      [null, null],
    ]);
    const text = (await runCli(['status', batchId], env)).stdout;
    expect(text).toMatch(/^planned {2}amount 7\.50 USDC {2}fee — {2}net — {2}\(not estimated yet/m);
    expect(text).not.toMatch(/^planned.*fee 0\.00/m);

    // One estimated; one ends failed before its estimate: the third may still be sent, unestimated.
    await store.saveEstimate(batchId, 'fee-1', {
      fee: { total: 100_000n, platform: 90_000n, gas: 10_000n },
      netReceive: 1_400_000n,
    });
    await store.transition(batchId, 'fee-2', {
      expected: ['queued'],
      to: 'failed',
      fields: { error: { code: 'x', message: 'y' } },
    });
    const partly = await doc();
    expect(partly.totals).toMatchObject({ fee: null, net_receive: null });
    expect(partly.transfers.find((t) => t.id === 'fee-1')).toMatchObject({
      fee: { total: '0.10', platform: '0.09', gas: '0.01' },
      net_receive: '1.40',
    });

    // The last one that may be sent is estimated: the totals sum the estimates made.
    await store.saveEstimate(batchId, 'fee-3', {
      fee: { total: 200_000n, platform: 150_000n, gas: 50_000n },
      netReceive: 3_300_000n,
    });
    expect((await doc()).totals).toMatchObject({ fee: '0.30', net_receive: '4.70' });
    expect((await runCli(['status', batchId], env)).stdout).toMatch(
      /^planned {2}amount 7\.50 USDC {2}fee 0\.30 {2}net 4\.70$/m,
    );

    // Re-queued without an estimate (as retry does with fee-2): unknown again until it is estimated.
    await store.transition(batchId, 'fee-2', { expected: ['failed'], to: 'queued' });
    expect((await doc()).totals).toMatchObject({ fee: null, net_receive: null });

    const exported = JSON.parse(
      (await runCli(['export', batchId, '--format', 'json'], env)).stdout,
    ) as Doc['transfers'];
    expect(exported.find((t) => t.id === 'fee-2')).toMatchObject({ fee: null, net_receive: null });
    const csvText = (await runCli(['export', batchId], env)).stdout.trim().split(/\r?\n/);
    const header = (csvText[0] ?? '').split(',');
    const row = (id: string) => (csvText.find((l) => l.startsWith(`${id},`)) ?? '').split(',');
    for (const column of ['fee_total', 'fee_platform', 'fee_gas', 'net_receive']) {
      expect(row('fee-2')[header.indexOf(column)], column).toBe('');
    }
    expect(row('fee-1')[header.indexOf('fee_total')]).toBe('0.10');
  });
});

describe('export', () => {
  it('CSV has the owner column the JSON export has, with the same values', async () => {
    const { env, prefix, batchId } = await enqueued('own', 2);
    const owner = '0xf9908B8d3030ddCf43416EdA9A04c353220Cee45';
    await cli.redis.hset(keys(prefix).transfer(batchId, 'own-1'), 'owner', owner);
    const json = JSON.parse((await runCli(['export', batchId, '--format', 'json'], env)).stdout) as {
      id: string;
      owner: string | null;
    }[];
    expect(json.map((t) => [t.id, t.owner])).toEqual([
      ['own-1', owner],
      ['own-2', null],
    ]);
    const lines = (await runCli(['export', batchId], env)).stdout.trim().split(/\r?\n/);
    const header = (lines[0] ?? '').split(',');
    expect(header.at(-1)).toBe('owner');
    const at = header.indexOf('owner');
    expect(lines.slice(1).map((l) => [l.split(',')[0], l.split(',')[at]])).toEqual([
      ['own-1', owner],
      ['own-2', ''],
    ]);
  });
});
