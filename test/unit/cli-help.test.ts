import { spawnSync } from 'node:child_process';
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
  // Every command of README "Using it".
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

  it('exits 2 with a hint on an unknown command', () => {
    const { code, stderr } = cli('frobnicate');
    expect(code).toBe(2);
    expect(stderr).toContain("unknown command 'frobnicate'");
  });
});
