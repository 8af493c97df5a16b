import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = fileURLToPath(new URL('../../bin/usdc-batch.js', import.meta.url));

/** Runs the real bin in a child process (the help is what a user sees, so it is tested as one). */
function cli(...args: string[]) {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '' },
    encoding: 'utf8',
    timeout: 15_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Commands in commander's help: `  name [options] <args>   description`. */
function listedCommands(help: string): Map<string, string> {
  const commands = new Map<string, string>();
  const section = help.split(/^Commands:$/m)[1] ?? '';
  for (const line of section.split('\n')) {
    const m = /^ {2}([a-z-]+)\b.*?\s{2,}(\S.*)$/.exec(line);
    if (m?.[1] && m[2]) commands.set(m[1], m[2]);
  }
  return commands;
}

describe('usdc-batch --help', () => {
  // Every command of docs/operating.md "The commands".
  const PRODUCT_COMMANDS = [
    'worker',
    'serve',
    'enqueue',
    'status',
    'batches',
    'export',
    'retry',
    'resolve',
    'approve',
    'cancel',
    'pause',
    'resume',
    'schedule',
    'recipients',
    'access',
    'audit',
    'wallets',
    'sandbox',
    'demo',
  ];

  it('lists every command of the product with a one-line description, and exits 0', () => {
    const { code, stdout } = cli('--help');
    expect(code).toBe(0);
    const listed = listedCommands(stdout);
    for (const name of PRODUCT_COMMANDS) {
      expect(listed.get(name), `command ${name}`).toMatch(/^\S.{9,}$/);
    }
  });

  it('lists the schedule subcommands add, list and remove', () => {
    const { code, stdout } = cli('schedule', '--help');
    expect(code).toBe(0);
    const listed = listedCommands(stdout);
    for (const name of ['add', 'list', 'remove']) expect(listed.get(name), name).toBeTruthy();
  });

  it('lists the recipients subcommands list, add, remove and import, and cancel --transfer', () => {
    const { code, stdout } = cli('recipients', '--help');
    expect(code).toBe(0);
    const listed = listedCommands(stdout);
    for (const name of ['list', 'add', 'remove', 'import']) expect(listed.get(name), name).toBeTruthy();
    expect(cli('recipients', 'add', '--help').stdout).toContain('--label');
    expect(cli('cancel', '--help').stdout).toContain('--transfer <id>');
  });

  it('documents every option of enqueue that the product promises', () => {
    const { code, stdout } = cli('enqueue', '--help');
    expect(code).toBe(0);
    for (const option of [
      '--batch-id',
      '--skip-invalid',
      '--allow-duplicates',
      '--expect-rows',
      '--expect-total',
      '--dry-run',
      '--wait',
      '--json',
    ]) {
      expect(stdout).toContain(option);
    }
  });

  it('prints the version with --version (and -V), exit 0', () => {
    const { version } = JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const { code, stdout } = cli(flag);
      expect(code, flag).toBe(0);
      expect(stdout, flag).toBe(`${version}\n`);
    }
  });

  it('describes every argument, subcommands included, in an Arguments section', () => {
    const withArguments = [
      ['resolve'],
      ['schedule', 'add'],
      ['schedule', 'remove'],
      ['recipients', 'add'],
      ['recipients', 'remove'],
      ['recipients', 'import'],
    ];
    for (const command of withArguments) {
      const { code, stdout } = cli(...command, '--help');
      expect(code, command.join(' ')).toBe(0);
      const section = stdout.split(/^Arguments:$/m)[1]?.split(/^Options:$/m)[0] ?? '';
      const args = [...(stdout.split('\n')[0] ?? '').matchAll(/<([a-z-]+)>/g)].map((m) => m[1]);
      expect(args.length, command.join(' ')).toBeGreaterThan(0);
      // Each argument on its own line, with words after it.
      for (const arg of args)
        expect(section, `${command.join(' ')} <${arg}>`).toMatch(new RegExp(`^ {2}${arg} +\\S`, 'm'));
    }
  });

  it('says what the sandbox admin routes do, the balance route included (a drill sets a drained chain)', () => {
    const { code, stdout } = cli('sandbox', '--help');
    expect(code).toBe(0);
    const admin = stdout.split(/^Admin routes/m)[1] ?? '';
    for (const route of [
      '/__admin/config',
      '/__admin/balances',
      '/__admin/balance ',
      '/__admin/outside-permit',
      '/__admin/blacklist',
      '/__admin/freeze',
      '/__admin/ledger',
      '/__admin/reset',
    ])
      expect(admin, route).toContain(route);
    expect(admin).toMatch(/POST \/__admin\/balance +\{"chain","address","amount"\}: set a USDC balance/);
    expect(stdout).toContain('--metrics-token-file <file>');
  });

  it('exits 2 with a hint on an unknown command', () => {
    const { code, stderr } = cli('frobnicate');
    expect(code).toBe(2);
    expect(stderr).toContain("unknown command 'frobnicate'");
  });
});
