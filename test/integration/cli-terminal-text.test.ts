import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, REPO_ROOT, runCli } from '../helpers/cli.ts';
import { useCliSuite } from '../helpers/cli-suite.ts';
import { startServe, type ServeProcess } from '../helpers/serve.ts';
import { EVM, keysUnder, newPrefix } from './ingest-fixtures.ts';

const TOKEN = 'hook-token-terminal-0123456789';
const ESC = '\x1b';
const BEL = '\x07';
const CSI = '\u009b';
// The probe's memo: retitles the terminal, then colours what follows.
const RETITLE = `${ESC}]0;pwned${BEL}${ESC}[31mred`;

/** Any control character a terminal could act on (line feeds and the pty's carriage returns aside). */
const RAW_CONTROL = /[\u0000-\u0009\u000b\u000c\u000e-\u001f\u007f-\u009f]/;

const cli = useCliSuite('usdc-terminal-');
const env = (prefix: string) => cli.env(prefix);
const write = (name: string, text: string) => cli.write(name, text);

/**
 * Finding 5 of issue 19: memos kept ESC, BEL, NUL and newlines; `export` to a terminal replayed
 * `ESC]0;…BEL` and colour codes; `enqueue` echoed raw escapes in its error messages.
 */
describe('memos are plain text, and the CLI shows outside text escaped', () => {
  it('refuses a memo with a control character as an invalid row at its line, and prints no raw escape', async () => {
    const prefix = newPrefix();
    const file = write(
      'memos.csv',
      [
        'id,from,to,amount,recipient,memo',
        `m1,ETH,BASE,1,${EVM[0]},"${RETITLE}"`,
        `m2,ETH,BASE,2,${EVM[0]},"two\nlines"`,
        `m3,ETH,BASE,3,${EVM[0]},tab\there`,
        `m4,ETH,BASE,4,${EVM[0]},c1 ${CSI}2J`,
        `m5,ETH,BASE,5,${EVM[0]},nul\u0000`,
        `m6,${ESC}[31mETH,BASE,6,${EVM[0]},fine: accents é and emoji 💸 are text`,
        '',
      ].join('\n'),
    );
    const human = await runCli(['enqueue', file], env(prefix));
    expect(human.code).toBe(1);
    expect(human.stdout).not.toMatch(RAW_CONTROL);
    expect(human.stderr).not.toMatch(RAW_CONTROL);
    expect(human.stdout).toContain('rejected: nothing was enqueued');
    for (const [line, code, at] of [
      [2, 'U+001B', 1],
      [3, 'U+000A', 4],
      [5, 'U+0009', 4],
      [6, 'U+009B', 4],
      [7, 'U+0000', 4],
    ] as const) {
      expect(human.stdout).toContain(
        `line ${line}, column memo: memo contains a control character (${code} at character ${at})`,
      );
    }
    // An error quoting input shows its escapes as text.
    expect(human.stdout).toContain('line 8, column from: unknown chain "\\x1b[31mETH"');
    expect(human.stdout).not.toMatch(/line 8, column memo/);

    const json = await runCli(['enqueue', file, '--json'], env(prefix));
    expect(json.code).toBe(1);
    expect(json.stdout).not.toMatch(RAW_CONTROL);
    const doc = JSON.parse(json.stdout) as {
      rejected: number;
      error_count: number;
      errors: { line: number; column: string }[];
    };
    expect(doc).toMatchObject({ rejected: 6, error_count: 6 });
    expect(doc.errors.map((e) => [e.line, e.column])).toEqual([
      [2, 'memo'],
      [3, 'memo'],
      [5, 'memo'],
      [6, 'memo'],
      [7, 'memo'],
      [8, 'from'],
    ]);
    expect(await keysUnder(cli.redis, prefix)).toEqual([]);
  });

  const haveScript =
    spawnSync('sh', ['-c', 'command -v script'], { stdio: 'ignore' }).status === 0 &&
    process.platform === 'linux';
  it.runIf(haveScript)(
    'export and status on a terminal show an old record’s control characters escaped; export to a file keeps them',
    async () => {
      const prefix = newPrefix();
      const file = write('ok.csv', `id,from,to,amount,recipient,memo\nt1,ETH,BASE,1,${EVM[1]},payroll\n`);
      const enqueued = await runCli(['enqueue', file, '--batch-id', 'term-1'], env(prefix));
      expect(enqueued.code, enqueued.stdout).toBe(0);
      // A record from before memos were plain text, and a failure message as a service might word it.
      await cli.redis.hset(`${prefix}:t:term-1:t1`, {
        memo: RETITLE,
        error_code: 'transfer_refused',
        error_message: `refused ${CSI}31m${ESC}]0;x${BEL}`,
      });

      // `script` gives the command a pseudo-terminal as its stdout, as a person's shell would.
      const onTerminal = (args: string[]) => {
        const command = [process.execPath, BIN, ...args].map((a) => `'${a}'`).join(' ');
        const run = spawnSync('script', ['-qec', command, '/dev/null'], {
          cwd: REPO_ROOT,
          encoding: 'utf8',
          timeout: 60_000,
          env: {
            PATH: process.env['PATH'],
            HOME: process.env['HOME'],
            SHELL: '/bin/sh',
            LOG_LEVEL: 'warn',
            ...env(prefix),
          },
        });
        expect(run.status, run.stdout + run.stderr).toBe(0);
        return run.stdout;
      };
      for (const args of [
        ['export', 'term-1'],
        ['export', 'term-1', '--format', 'json'],
        ['status', 'term-1'],
      ]) {
        const shown = onTerminal(args);
        expect(shown, args.join(' ')).not.toMatch(RAW_CONTROL);
        expect(shown, args.join(' ')).toContain('t1');
      }
      expect(onTerminal(['export', 'term-1'])).toContain('\\x1b]0;pwned\\x07\\x1b[31mred');
      expect(onTerminal(['export', 'term-1', '--format', 'json'])).toContain('\\u001b]0;pwned\\u0007');
      expect(onTerminal(['status', 'term-1'])).toContain('refused \\x9b31m\\x1b]0;x\\x07');

      // A file is data: the export keeps the record as it is.
      const out = join(cli.dir, 'export.csv');
      const toFile = await runCli(['export', 'term-1', '-o', out], env(prefix));
      expect(toFile.code).toBe(0);
      expect(readFileSync(out, 'utf8')).toContain(RETITLE);
    },
  );
});

/**
 * Issue 23 item 2.5: `status` and `audit` cut long values with `…` even into a pipe or a file. A
 * table cuts only on a terminal; anywhere else every value is printed whole.
 */
describe('tables print whole values unless stdout is a terminal', () => {
  const haveScript =
    spawnSync('sh', ['-c', 'command -v script'], { stdio: 'ignore' }).status === 0 &&
    process.platform === 'linux';

  it('status and audit into a pipe keep a long batch id and a long failure message whole', async () => {
    const prefix = newPrefix();
    // 90 characters: longer than a terminal's column (60).
    const batchId = `long-${'b'.repeat(80)}-end01`;
    const message = `the service refused it: ${'a long explanation, '.repeat(5)}and the end of it`;
    const file = write('long.csv', `id,from,to,amount,recipient\nl1,ETH,BASE,1,${EVM[2]}\n`);
    const enqueued = await runCli(['enqueue', file, '--batch-id', batchId], env(prefix));
    expect(enqueued.code, enqueued.stdout + enqueued.stderr).toBe(0);
    await cli.redis.hset(`${prefix}:t:${batchId}:l1`, {
      error_code: 'transfer_refused',
      error_message: message,
    });

    const status = await runCli(['status', batchId], env(prefix));
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(`transfer_refused: ${message}`);
    expect(status.stdout).not.toContain('…');
    const audit = await runCli(['audit'], env(prefix));
    expect(audit.code, audit.stderr).toBe(0);
    expect(audit.stdout).toMatch(new RegExp(`\\senqueue\\s+${batchId}\\s`));
    expect(audit.stdout).not.toContain('…');

    if (!haveScript) return;
    // The same commands on a pseudo-terminal cut the long values to fit the screen.
    for (const [args, whole] of [
      [['status', batchId], message],
      [['audit'], batchId],
    ] as const) {
      const command = [process.execPath, BIN, ...args].map((a) => `'${a}'`).join(' ');
      const run = spawnSync('script', ['-qec', command, '/dev/null'], {
        cwd: REPO_ROOT,
        encoding: 'utf8',
        timeout: 60_000,
        env: {
          PATH: process.env['PATH'],
          HOME: process.env['HOME'],
          SHELL: '/bin/sh',
          LOG_LEVEL: 'warn',
          ...env(prefix),
        },
      });
      expect(run.status, run.stdout + run.stderr).toBe(0);
      expect(run.stdout, args.join(' ')).toContain('…');
      expect(run.stdout.split('\n').some((l) => l.includes(whole) && !l.startsWith('batch '))).toBe(false);
    }
  });
});

describe('POST /v1/batches through serve', () => {
  let api: ServeProcess;
  beforeAll(async () => {
    api = await startServe({ REDIS_URL: cli.suite.url, QUEUE_PREFIX: newPrefix(), HOOK_TOKEN: TOKEN });
  });
  afterAll(async () => {
    await api?.stop();
  });

  it('answers 422 with a line error for an ESC in a memo', async () => {
    const res = await api.call('/v1/batches', {
      method: 'POST',
      token: TOKEN,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        transfers: [
          { id: 'ok-1', from: 'ETH', to: 'BASE', amount: '1', recipient: EVM[2], memo: 'fine' },
          { id: 'bad-1', from: 'ETH', to: 'BASE', amount: '1', recipient: EVM[3], memo: RETITLE },
        ],
      }),
    });
    expect(res.status).toBe(422);
    const doc = (await res.json()) as { errors: unknown[]; error_count: number };
    expect(doc.error_count).toBe(1);
    expect(doc.errors).toEqual([
      {
        line: 2,
        column: 'memo',
        message:
          'memo contains a control character (U+001B at character 1); a memo is plain text on one line',
      },
    ]);
  });
});
