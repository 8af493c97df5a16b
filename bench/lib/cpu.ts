import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

export const TICKS_PER_SECOND =
  Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

/**
 * CPU time (user + system) a live process has used so far, in ms, from /proc/<pid>/stat; NaN when
 * it cannot be read (not Linux, or the process is gone). On a 2-core machine the CPU each process
 * spends per transfer, more than any latency, is what sets throughput.
 */
export function cpuMsOf(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start at state: utime is field 14.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND) * 1000;
  } catch {
    return Number.NaN;
  }
}
