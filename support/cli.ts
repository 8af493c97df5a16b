import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
export const BIN = fileURLToPath(new URL('../bin/usdc-batch.js', import.meta.url));

export type CliResult = { code: number | null; stdout: string; stderr: string };

/** Runs the real `usdc-batch` entry point as a separate process, as a user would. */
export async function runCli(
  args: string[],
  env: Record<string, string | undefined>,
  options: { cwd?: string; timeoutMs?: number; input?: string } = {},
): Promise<CliResult> {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: options.cwd ?? REPO_ROOT,
    env: { PATH: process.env['PATH'], HOME: process.env['HOME'], LOG_LEVEL: 'warn', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdin.end(options.input ?? '');
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

export type SpawnedProcess = {
  readonly child: ChildProcess;
  output(): string;
  /** SIGTERM and wait (SIGKILL after `graceMs`). */
  stop(graceMs?: number): Promise<number | null>;
  kill9(): Promise<void>;
};

/** Starts a long-running CLI command (`worker`, `serve`, `sandbox`). */
export function spawnCli(args: string[], env: Record<string, string | undefined>): SpawnedProcess {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: REPO_ROOT,
    env: { PATH: process.env['PATH'], HOME: process.env['HOME'], LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-200_000)));
  child.stderr?.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-200_000)));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  return {
    child,
    output: () => out,
    async stop(graceMs = 20_000) {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(t);
      return code;
    },
    async kill9() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await exited;
    },
  };
}

export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  { timeoutMs = 60_000, intervalMs = 200 } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
