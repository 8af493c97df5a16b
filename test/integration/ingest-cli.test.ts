import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAudit } from '../../src/store/audit.ts';
import { createTransferStore } from '../../src/store/transfer-store.ts';
import { runCli, spawnCli } from '../helpers/cli.ts';
import { useCliSuite } from '../helpers/cli-suite.ts';
import { startSandboxProcess, type SandboxProcess } from '../helpers/sandbox.ts';
import { EVM, newPrefix, SOL } from './ingest-fixtures.ts';

const cli = useCliSuite('usdc-enqueue-cli-');
const env = (prefix: string, extra: Record<string, string> = {}) => cli.env(prefix, extra);
const write = (name: string, text: string) => cli.write(name, text);

describe('usdc-batch enqueue', () => {
  it('enqueues the sample, then says the same file adds nothing', async () => {
    const prefix = newPrefix();
    const first = await runCli(['enqueue', 'samples/payouts.csv', '--json'], env(prefix));
    expect(first.code).toBe(0);
    const doc = JSON.parse(first.stdout);
    expect(doc).toMatchObject({
      created: true,
      accepted: 8,
      rejected: 0,
      duplicates: 0,
      errors: [],
      totals: { amount: '4313.990001' },
    });
    expect(doc.batch_id).toMatch(/^b-[0-9a-f]{16}$/);
    expect(await cli.redis.hget(`${prefix}:batch:${doc.batch_id}`, 'rows')).toBe('8');

    const again = await runCli(['enqueue', 'samples/payouts.csv'], env(prefix));
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(
      `batch ${doc.batch_id}: already enqueued with the same rows; nothing added`,
    );
  });

  it('prints a summary with rows per route, and exits 1 listing every problem when rejecting', async () => {
    const prefix = newPrefix();
    const bad = write(
      'bad.csv',
      `id,from,to,amount,recipient\na,ETH,BASE,1.5,${EVM[0]}\nb,ETH,SOLANA,2,${EVM[1]}\nc,DOGE,BASE,-1,${EVM[1]}\n`,
    );
    const human = await runCli(['enqueue', bad], env(prefix));
    expect(human.code).toBe(1);
    expect(human.stdout).toContain('rejected: nothing was enqueued');
    expect(human.stdout).toContain('line 3, column recipient: recipient');
    expect(human.stdout).toContain('line 4, column from: unknown chain "DOGE"');
    expect(human.stdout).toContain('line 4, column amount: amount must not have a sign');
    const json = await runCli(['enqueue', bad, '--json'], env(prefix));
    expect(json.code).toBe(1);
    const doc = JSON.parse(json.stdout);
    expect(doc).toMatchObject({ batch_id: null, created: false, accepted: 0, rejected: 2 });
    expect(doc.errors).toHaveLength(3);
    expect(await cli.redis.keys(`${prefix}:*`)).toEqual([]);

    const ok = await runCli(['enqueue', bad, '--skip-invalid'], env(prefix));
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/accepted\s+1/);
    expect(ok.stdout).toMatch(/ETH\s+BASE\s+1\s+1\.50/);
  });

  /**
   * Issue 23 item 2.9: a file refused for its header opened with "rejected: nothing was enqueued"
   * then said "rejected 0"; invalid rows or likely duplicates never named the flag that changes it.
   */
  it('says a file was rejected for its header without counting rows, and names --skip-invalid and --allow-duplicates', async () => {
    const prefix = newPrefix();
    const header = write('header.csv', `id,from,to,amount,recipent\na,ETH,BASE,1,${EVM[0]}\n`);
    const human = await runCli(['enqueue', header], env(prefix));
    expect(human.code).toBe(1);
    const lines = human.stdout.split('\n');
    expect(lines[0]).toBe('rejected: nothing was enqueued (the file was rejected for its header)');
    expect(human.stdout).not.toMatch(/rejected\s+0/);
    expect(human.stdout).not.toContain('--skip-invalid');
    expect(human.stdout).toContain('line 1, column recipent: unknown column "recipent"');
    expect(human.stdout).toContain('line 1, column recipient: missing required column "recipient"');
    // The JSON document keeps its shape.
    const json = JSON.parse((await runCli(['enqueue', header, '--json'], env(prefix))).stdout);
    expect(json).toMatchObject({ batch_id: null, created: false, accepted: 0, rejected: 0, duplicates: 0 });
    expect(json.error_count).toBe(2);

    // A control total that does not match says so, with no row counted.
    const two = write(
      'two.csv',
      `id,from,to,amount,recipient\na,ETH,BASE,1,${EVM[0]}\nb,ETH,BASE,2,${EVM[1]}\n`,
    );
    const control = await runCli(['enqueue', two, '--expect-rows', '3'], env(prefix));
    expect(control.code).toBe(1);
    expect(control.stdout.split('\n')[0]).toBe(
      'rejected: nothing was enqueued (the file was rejected: a control total does not match (--expect-rows, --expect-total))',
    );
    expect(control.stdout).not.toMatch(/rejected\s+0/);

    // Rows judged one by one: the counts, then what --skip-invalid would do.
    const rows = write(
      'rows.csv',
      `id,from,to,amount,recipient\na,ETH,BASE,1,${EVM[0]}\nb,ETH,BASE,-2,${EVM[1]}\nc,BASE,ARB,3,${EVM[1]}\n`,
    );
    const invalid = await runCli(['enqueue', rows], env(prefix));
    expect(invalid.code).toBe(1);
    expect(invalid.stdout.split('\n').slice(0, 5)).toEqual([
      'rejected: nothing was enqueued',
      '  rejected    1 invalid row',
      '  duplicates  0 likely duplicates',
      '  valid       2',
      '  --skip-invalid would enqueue the 2 valid rows and report the rest',
    ]);
    expect(invalid.stdout).not.toContain('--allow-duplicates');

    // Rows without an id that repeat a payment: --allow-duplicates is named.
    const twice = write(
      'twice.csv',
      `from,to,amount,recipient\nETH,BASE,5,${EVM[0]}\nETH,BASE,5,${EVM[0]}\nETH,BASE,6,${EVM[1]}\n`,
    );
    const duplicate = await runCli(['enqueue', twice], env(prefix));
    expect(duplicate.code).toBe(1);
    expect(duplicate.stdout).toContain('  duplicates  1 likely duplicate\n');
    expect(duplicate.stdout).toContain('  --allow-duplicates would accept the likely duplicates');
    expect(duplicate.stdout).not.toContain('--skip-invalid');
    expect(await cli.redis.keys(`${prefix}:*`)).toEqual([]);
  });

  it('exits 3 when a --batch-id is reused with other content, and 2 on a usage error', async () => {
    const prefix = newPrefix();
    const a = write('a.csv', `from,to,amount,recipient\nETH,BASE,1,${EVM[0]}\n`);
    const b = write('b.csv', `from,to,amount,recipient\nETH,BASE,2,${EVM[0]}\n`);
    expect((await runCli(['enqueue', a, '--batch-id', 'nightly-1'], env(prefix))).code).toBe(0);
    const conflict = await runCli(['enqueue', b, '--batch-id', 'nightly-1', '--json'], env(prefix));
    expect(conflict.code).toBe(3);
    expect(JSON.parse(conflict.stdout).error.code).toBe('USDC_BATCH_CONFLICT');
    expect((await runCli(['enqueue', a, '--expect-rows', 'many'], env(prefix))).code).toBe(2);
    expect((await runCli(['enqueue', join(cli.dir, 'missing.csv')], env(prefix))).code).toBe(2);
    const control = await runCli(['enqueue', b, '--expect-rows', '2', '--json'], env(prefix));
    expect(control.code).toBe(1);
    expect(JSON.parse(control.stdout).errors[0].message).toBe(
      'control total: expected 2 rows, the input has 1',
    );
  });

  it('--via records the road on the batch and every transfer, and status shows it; SOLANA rows are refused on CCTP', async () => {
    const prefix = newPrefix();
    const rows = `from,to,amount,recipient\nETH,BASE,1,${EVM[0]}\nARB,POLYGON,2,${EVM[1]}\n`;
    const file = write('via.csv', rows);
    const res = await runCli(['enqueue', file, '--via', 'cctp', '--json'], env(prefix));
    expect(res.code, res.stderr).toBe(0);
    const doc = JSON.parse(res.stdout);
    expect(doc).toMatchObject({ via: 'cctp', accepted: 2 });
    expect(await cli.redis.hget(`${prefix}:batch:${doc.batch_id}`, 'via')).toBe('cctp');
    const store = createTransferStore({ redis: cli.redis, prefix });
    const ids = await cli.redis.zrange(`${prefix}:batch:${doc.batch_id}:rows`, 0, -1);
    expect(ids).toHaveLength(2);
    for (const id of ids) expect((await store.load(doc.batch_id, id))?.via, id).toBe('cctp');
    const audit = await readAudit(cli.redis, prefix, { batch: doc.batch_id });
    expect(audit.find((e) => e.action === 'enqueue')?.detail).toMatchObject({ via: 'cctp', rows: 2 });
    const status = await runCli(['status', doc.batch_id, '--json'], env(prefix));
    expect(JSON.parse(status.stdout).via).toBe('cctp');
    expect((await runCli(['status', doc.batch_id], env(prefix))).stdout).toContain(', via cctp, created');
    expect((await runCli(['batches'], env(prefix))).stdout).toMatch(/\scsv\s+cctp\s/);

    // The same rows on another road: a conflict (exit 3), not a second batch paying them again.
    const other = await runCli(['enqueue', file, '--via', 'service', '--json'], env(prefix));
    expect(other.code).toBe(3);
    expect(JSON.parse(other.stdout).error.message).toContain('already exists on the cctp road, not service');
    // TRANSFER_VIA is the road of a batch that names none.
    const byDefault = await runCli(
      ['enqueue', write('via-default.csv', `from,to,amount,recipient\nETH,BASE,3,${EVM[2]}\n`), '--json'],
      env(prefix, { TRANSFER_VIA: 'cctp-fast' }),
    );
    expect(JSON.parse(byDefault.stdout).via).toBe('cctp-fast');

    const solana = write(
      'via-sol.csv',
      `from,to,amount,recipient\nETH,BASE,4,${EVM[0]}\nETH,SOLANA,5,${SOL[0]}\nSOLANA,BASE,6,${EVM[1]}\n`,
    );
    const refused = await runCli(['enqueue', solana, '--via', 'cctp-fast', '--json'], env(prefix));
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout).errors).toEqual([
      {
        line: 3,
        column: 'to',
        message:
          'SOLANA is not on the cctp-fast road (EVM chains only); take this row through the service (via service)',
      },
      {
        line: 4,
        column: 'from',
        message:
          'SOLANA is not on the cctp-fast road (EVM chains only); take this row through the service (via service)',
      },
    ]);
    const human = await runCli(['enqueue', solana, '--via', 'cctp'], env(prefix));
    expect(human.stdout).toContain('line 3, column to: SOLANA is not on the cctp road');

    const wrong = await runCli(['enqueue', file, '--via', 'bridge'], env(prefix));
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('--via must be one of service, cctp, cctp-fast, not "bridge"');
  });

  it('refuses batch ids that do not start with a letter or digit, wherever one is typed (exit 2)', async () => {
    const prefix = newPrefix();
    const a = write('ids.csv', `from,to,amount,recipient\nETH,BASE,1,${EVM[0]}\n`);
    for (const id of ['.', '..', '-', '--help', '_x', '.hidden', 'a/b']) {
      const res = await runCli(['enqueue', a, `--batch-id=${id}`, '--json'], env(prefix));
      expect(res.code, id).toBe(2);
      expect(res.stderr, id).toContain('starting with a letter or digit');
    }
    for (const args of [
      ['status', '.'],
      ['export', '..'],
      ['retry', '-'],
      ['approve', '_x'],
      ['cancel', '.x'],
      ['resolve', '..', 't1', '--not-sent'],
      ['audit', '--batch', '.'],
    ]) {
      const res = await runCli(args, env(prefix));
      expect(res.code, args.join(' ')).toBe(2);
      expect(res.stderr, args.join(' ')).toContain('A batch id is 1-100 characters');
    }
    expect(await cli.redis.keys(`${prefix}:*`)).toEqual([]);
    // The first character aside, the same characters as before.
    const ok = await runCli(['enqueue', a, '--batch-id', '9.payroll_2025-06.v2'], env(prefix));
    expect(ok.code, ok.stdout).toBe(0);
  });

  it('--wait follows the batch to completion and exits 1 when a transfer failed', async () => {
    const prefix = newPrefix();
    const file = write(
      'wait.csv',
      `id,from,to,amount,recipient\nw1,ETH,BASE,1,${EVM[0]}\nw2,BASE,ARB,2,${EVM[1]}\n`,
    );
    const proc = spawnCli(['enqueue', file, '--batch-id', 'wait-1', '--wait', '--json'], env(prefix));
    const store = createTransferStore({ redis: cli.redis, prefix });
    const deadline = Date.now() + 20_000;
    while ((await cli.redis.hget(`${prefix}:batch:wait-1`, 'enqueued')) !== '1') {
      if (Date.now() > deadline) throw new Error(`not enqueued: ${proc.output()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    await store.transition('wait-1', 'w1', { expected: ['queued'], to: 'in_progress' });
    await store.transition('wait-1', 'w1', { expected: ['in_progress'], to: 'submitted' });
    await store.transition('wait-1', 'w2', { expected: ['queued'], to: 'failed' });
    const code = await new Promise<number | null>((resolve) => proc.child.on('exit', (c) => resolve(c)));
    expect(code, proc.output()).toBe(1);
    const doc = JSON.parse(proc.output().slice(proc.output().indexOf('{')));
    expect(doc).toMatchObject({ batch_id: 'wait-1', counts: { submitted: 1, failed: 1 } });
    // What was paid beside what was planned; the submitted intent is not final yet: not settled.
    expect(doc.totals).toEqual({
      amount: '3.00',
      paid: { amount: '1.00', fee: '0.00', net_receive: '0.00' },
    });
    expect(doc.settled).toBe(false);
    expect(doc.intents).toEqual({ complete: 0, failed: 0, untracked: 0, open: 1 });
  });
});

describe('usdc-batch enqueue --dry-run against the sandbox', () => {
  let sandbox: SandboxProcess;
  beforeAll(async () => {
    sandbox = await startSandboxProcess();
  });
  afterAll(async () => {
    await sandbox?.stop();
  });

  it('estimates every row and prints fees and totals, writing nothing', async () => {
    const prefix = newPrefix();
    const e = env(prefix, { TRANSFER_API_URL: sandbox.url, TRANSFER_API_KEY: sandbox.api_key });
    const json = await runCli(['enqueue', 'samples/payouts.csv', '--dry-run', '--json'], e);
    expect(json.code, json.stderr).toBe(0);
    const doc = JSON.parse(json.stdout);
    expect(doc).toMatchObject({ dry_run: true, accepted: 8, errors: [], totals: { amount: '4313.990001' } });
    const fee = Number(doc.totals.fee);
    expect(fee).toBeGreaterThan(0);
    expect(Number(doc.totals.net_receive)).toBeCloseTo(4313.990001 - fee, 5);
    const human = await runCli(['enqueue', 'samples/payouts.csv', '--dry-run'], e);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain('dry run: nothing was written, signed or sent');
    expect(human.stdout).toMatch(/fee\s+\d+\.\d+ USDC/);
    expect(human.stdout).toMatch(/net\s+\d+\.\d+ USDC/);
    expect(await cli.redis.keys(`${prefix}:*`)).toEqual([]);
  });
});
