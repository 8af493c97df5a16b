import { spawn } from 'node:child_process';
import { accessSync, constants, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../../support/cli.ts';
import { trackChild } from './cleanup.ts';

const GNU_TIME = '/usr/bin/time';

function hasGnuTime(): boolean {
  try {
    accessSync(GNU_TIME, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export type TimedResult = {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Wall time from spawn to exit, including Node's own start-up. */
  readonly wallMs: number;
  /** Peak resident set size of the process, in bytes (VmHWM), or NaN if it could not be read. */
  readonly peakRss: number;
  readonly rssSource: '/usr/bin/time -v' | '/proc/<pid>/status VmHWM';
};

/**
 * Runs `node <args>` to completion as its own process and measures it as a user would see it:
 * wall time, and peak RSS from `/usr/bin/time -v` when present, else by polling VmHWM (a high-water
 * mark, so the last value read before exit is the peak to within one poll).
 */
export async function runNodeTimed(
  args: readonly string[],
  env: Record<string, string>,
  timeoutMs: number,
): Promise<TimedResult> {
  const gnu = hasGnuTime();
  const dir = mkdtempSync(join(tmpdir(), 'usdc-bench-time-'));
  const timeFile = join(dir, 'time.txt');
  const [cmd, argv] = gnu
    ? [GNU_TIME, ['-v', '-o', timeFile, process.execPath, ...args]]
    : [process.execPath, [...args]];
  const started = performance.now();
  const child = spawn(cmd, argv, {
    cwd: REPO_ROOT,
    env: { PATH: process.env['PATH'], HOME: process.env['HOME'], LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  trackChild(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-100_000)));
  let polledHwm = Number.NaN;
  const poll = gnu
    ? undefined
    : setInterval(() => {
        try {
          const kb = /VmHWM:\s+([0-9]+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1];
          if (kb) polledHwm = Number(kb) * 1024;
        } catch {
          // exited between polls
        }
      }, 25);
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  const wallMs = performance.now() - started;
  clearTimeout(timer);
  if (poll) clearInterval(poll);
  let peakRss = polledHwm;
  if (gnu) {
    try {
      const kb = /Maximum resident set size \(kbytes\): ([0-9]+)/.exec(readFileSync(timeFile, 'utf8'))?.[1];
      peakRss = kb ? Number(kb) * 1024 : Number.NaN;
      // GNU time reports the child's own exit status as "Command exited with non-zero status N".
    } catch {
      peakRss = Number.NaN;
    }
  }
  rmSync(dir, { recursive: true, force: true });
  return {
    code,
    stdout,
    stderr,
    wallMs,
    peakRss,
    rssSource: gnu ? '/usr/bin/time -v' : '/proc/<pid>/status VmHWM',
  };
}
