import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/*
 * Which cores a process tree may run on (`taskset`), for a run that gives the product and the
 * machine's stand-ins their own core budgets: the worker and Redis on some cores, the sandbox and its
 * anvil chains on the others (bench section 3, four chains). Linux only; `coreSplit()` is undefined
 * where `taskset` or a second core is missing, and the section leaves that run out.
 */

/** The product's cores and the sandbox's, as `taskset -c` lists: the first half and the rest. */
export type CoreSplit = { readonly product: string; readonly sandbox: string };

export function coreSplit(): CoreSplit | undefined {
  const n = availableParallelism();
  if (n < 2 || !hasTaskset()) return undefined;
  const half = Math.floor(n / 2);
  return { product: range(0, half - 1), sandbox: range(half, n - 1) };
}

/** Every core, to give a tree back the whole machine. */
export function allCores(): string {
  return range(0, availableParallelism() - 1);
}

/** Pins `root` and every process below it (each of their threads) to `cores`. */
export function pinTree(root: number, cores: string): void {
  for (const pid of processTree(root)) {
    try {
      execFileSync('taskset', ['-a', '-p', '-c', cores, String(pid)], { stdio: 'ignore' });
    } catch {
      // The process ended meanwhile.
    }
  }
}

function range(from: number, to: number): string {
  return from === to ? String(from) : `${from}-${to}`;
}

function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** `root` and its descendants, from each process's parent in /proc/<pid>/stat. */
function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const ppid = parentOf(pid);
    if (ppid !== undefined) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  }
  const out: number[] = [];
  const todo = [root];
  while (todo.length > 0) {
    const pid = todo.pop() as number;
    out.push(pid);
    todo.push(...(children.get(pid) ?? []));
  }
  return out;
}

/** The parent pid of `pid` (field 4 of /proc/<pid>/stat, after the command in parentheses). */
function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}
