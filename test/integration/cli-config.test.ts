import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'bin/usdc-batch.js');
const work = mkdtempSync(join(tmpdir(), 'usdc-batch-cli-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

type Run = { code: number | null; stdout: string; stderr: string };

/** Runs a real process with only the given environment (plus PATH/HOME), in `cwd`, bounded in time. */
function run(command: string, args: string[], env: Record<string, string>, cwd: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd,
      env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const problemLines = (text: string) => text.split('\n').filter((l) => /^ {2}- [A-Z_ /]+: /.test(l));

// Malformed, but close enough to a key that printing it would leak most of one.
const MALFORMED_KEY = `0x${'9c'.repeat(31)}zz`;

describe('usdc-batch worker with a broken configuration', () => {
  const env = {
    TRANSFER_API_URL: 'not a url',
    TRANSFER_API_KEY: 'wrong',
    EVM_PRIVATE_KEY: MALFORMED_KEY,
    WORKER_CONCURRENCY: '-3',
  };

  const expectFourProblems = (r: Run) => {
    expect(r.code).toBe(2);
    const lines = problemLines(r.stderr);
    expect(lines.map((l) => l.slice(4, l.indexOf(':')))).toEqual([
      'TRANSFER_API_URL',
      'TRANSFER_API_KEY',
      'EVM_PRIVATE_KEY',
      'WORKER_CONCURRENCY',
    ]);
    const all = r.stdout + r.stderr;
    expect(all).not.toContain(MALFORMED_KEY);
    expect(all).not.toContain('9c9c9c9c');
    expect(all).not.toContain('wrong');
    // Every setting is there, only wrong: no pointer to where settings come from.
    expect(r.stderr).not.toContain('.env.example');
  };

  it('prints four named problems, exits 2 and never prints the key', async () => {
    expectFourProblems(await run(process.execPath, [BIN, 'worker'], env, work));
  });

  it('does the same through npx usdc-batch, as a user types it', async () => {
    const r = await run('npx', ['--prefix', ROOT, '--no-install', 'usdc-batch', 'worker'], env, work);
    expectFourProblems(r);
  });

  it('reads .env from the working directory, the process environment winning', async () => {
    const cwd = mkdtempSync(join(work, 'dotenv-'));
    writeFileSync(
      join(cwd, '.env'),
      [
        'TRANSFER_API_URL=http://127.0.0.1:8787',
        'TRANSFER_API_KEY=sk_test_from_dotenv_1234',
        `EVM_PRIVATE_KEY=${MALFORMED_KEY}`,
        'WORKER_CONCURRENCY=-3',
        'HTTP_PORT=99999',
      ].join('\n'),
    );
    const r = await run(
      process.execPath,
      [BIN, 'worker'],
      { TRANSFER_API_URL: 'not a url', HTTP_PORT: '8080' },
      cwd,
    );
    expect(r.code).toBe(2);
    expect(problemLines(r.stderr).map((l) => l.slice(4, l.indexOf(':')))).toEqual([
      'TRANSFER_API_URL',
      'EVM_PRIVATE_KEY',
      'WORKER_CONCURRENCY',
    ]);
    expect(r.stderr).not.toContain('sk_test_from_dotenv_1234');
    expect(r.stderr).not.toContain(MALFORMED_KEY);
  });

  it('stops at an OTEL_* variable it cannot use (docs/traces.md), read from .env too, never printing the endpoint', async () => {
    const cwd = mkdtempSync(join(work, 'otel-'));
    writeFileSync(
      join(cwd, '.env'),
      [
        'OTEL_EXPORTER_OTLP_ENDPOINT=https://ops:s3cr3tCollectorPass@collector.example:4318',
        'OTEL_EXPORTER_OTLP_PROTOCOL=grpc',
      ].join('\n'),
    );
    const r = await run(
      process.execPath,
      [BIN, 'worker'],
      { OTEL_TRACES_SAMPLER_ARG: '2', OTEL_TRACES_SAMPLER: 'traceidratio' },
      cwd,
    );
    expect(r.code).toBe(2);
    expect(problemLines(r.stderr).map((l) => l.slice(4, l.indexOf(':')))).toEqual([
      'OTEL_EXPORTER_OTLP_PROTOCOL',
      'OTEL_TRACES_SAMPLER_ARG',
    ]);
    expect(r.stdout + r.stderr).not.toContain('s3cr3tCollectorPass');
    // Tracing is off unless an endpoint is set: the same malformed sampler then changes nothing.
    const off = await run(
      process.execPath,
      [BIN, 'worker'],
      { ...env, OTEL_TRACES_SAMPLER: 'nonsense' },
      work,
    );
    expectFourProblems(off);
  });

  it('names both key variables when the worker has no signing key at all', async () => {
    const r = await run(
      process.execPath,
      [BIN, 'worker'],
      { TRANSFER_API_URL: 'http://127.0.0.1:8787', TRANSFER_API_KEY: 'sk_test_0123456789' },
      work,
    );
    expect(r.code).toBe(2);
    expect(problemLines(r.stderr)).toEqual([
      expect.stringMatching(
        /^ {2}- EVM_PRIVATE_KEY \/ SOLANA_KEYPAIR_FILE: a worker needs at least one signing key/,
      ),
    ]);
    expect(r.stderr).not.toContain('sk_test_0123456789');
  });
});

/**
 * Issue 23 item 2.9: a first `worker` (or `serve`) with nothing configured listed the missing
 * variables and stopped there; it also says where settings are described and how to get a working set.
 */
describe('a command started with no configuration at all', () => {
  for (const [command, first] of [
    ['worker', 'TRANSFER_API_URL'],
    ['serve', 'HOOK_TOKEN'],
  ] as const) {
    it(`${command} names what is missing and points at .env.example and sandbox --write-env`, async () => {
      const cwd = mkdtempSync(join(work, 'empty-'));
      const r = await run(process.execPath, [BIN, command], {}, cwd);
      expect(r.code, r.stderr).toBe(2);
      expect(problemLines(r.stderr).map((l) => l.slice(4, l.indexOf(':')))).toContain(first);
      expect(r.stderr).toContain(`${first}: is required`);
      expect(r.stderr).toContain('.env.example (in the checkout) describes each one');
      expect(r.stderr).toContain(
        '`usdc-batch sandbox --redis\n--write-env sandbox.env` writes a working set',
      );
      expect(r.stdout).toBe('');
    });
  }
});

describe('logging', () => {
  it('writes JSON logs to stderr and leaves stdout to the command', async () => {
    const logger = pathToFileURL(join(ROOT, 'src/log/logger.ts')).href;
    const script =
      `const { createLogger } = await import(${JSON.stringify(logger)});` +
      "createLogger('info').info({ headers: { 'X-API-Key': 'sk_live_abcdef123' } }, 'hello');";
    const r = await run(process.execPath, ['--input-type=module', '-e', script], {}, work);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('');
    const line = JSON.parse(r.stderr.trim()) as Record<string, unknown>;
    expect(line).toMatchObject({ level: 30, msg: 'hello', headers: { 'X-API-Key': '[redacted]' } });
  });
});
