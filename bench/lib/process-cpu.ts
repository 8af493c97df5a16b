import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { TICKS_PER_SECOND } from './cpu.ts';
import { fmt, median } from './stats.ts';

/**
 * Where a measured interval's CPU went, by process, from /proc (Linux): the worker(s), the sandbox
 * (the service simulator; LiteSVM runs inside it), the anvil chains (its child processes),
 * redis-server (its replica and its AOF-rewrite forks included), the bench process itself, and
 * whatever else ran on the machine (from /proc/stat), so that a reader sees which share of the
 * machine's cores is the product's and which is not.
 */

export const CPU_COMPONENTS = ['worker', 'sandbox', 'anvil', 'redis', 'bench', 'other', 'idle'] as const;
export type CpuComponent = (typeof CPU_COMPONENTS)[number];

/** The processes of one run: the anvils are found as the sandbox's descendants at each reading. */
export type CpuProcesses = {
  readonly workers: readonly (number | undefined)[];
  readonly sandbox: number | undefined;
  readonly redis: readonly number[];
  /**
   * The worker is a child of the bench that exits inside the interval (bench/raw/solana-worker.ts):
   * counted through the bench's cutime/cstime, the CPU of its children that exited.
   */
  readonly workerReapedByBench?: boolean;
};

export type CpuReading = {
  readonly atMs: number;
  /** CPU ms used so far, by component (`other` and `idle`: the machine's, all processes). */
  readonly ms: Readonly<Record<'worker' | 'sandbox' | 'anvil' | 'redis' | 'bench', number>>;
  readonly machineBusyMs: number;
  readonly machineIdleMs: number;
};

/** One interval: CPU ms by component over `wallMs`, on `cores` cores, for `transfers` transfers. */
export type CpuAccount = {
  readonly wallMs: number;
  readonly transfers: number;
  readonly cores: number;
  readonly ms: Readonly<Record<CpuComponent, number>>;
};

type ProcStat = { ppid: number; selfTicks: number; reapedTicks: number };

/** utime + stime (own) and cutime + cstime (its children that exited and were waited for). */
function procStat(pid: number): ProcStat | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After the command name (which may hold spaces): state is field 3, ppid 4, utime 14 … cstime 17.
    const f = stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
    return {
      ppid: f[1] as number,
      selfTicks: (f[11] as number) + (f[12] as number),
      reapedTicks: (f[13] as number) + (f[14] as number),
    };
  } catch {
    return undefined;
  }
}

/** Every live process's stat, and its children by parent PID. */
function processTable(): { stats: Map<number, ProcStat>; children: Map<number, number[]> } {
  const stats = new Map<number, ProcStat>();
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = procStat(Number(name));
    if (!s) continue;
    stats.set(Number(name), s);
    children.set(s.ppid, [...(children.get(s.ppid) ?? []), Number(name)]);
  }
  return { stats, children };
}

type Table = ReturnType<typeof processTable>;

/**
 * CPU ticks of a process and all its descendants: live ones read directly, exited ones through
 * their parent's cutime/cstime (so a child that exits during the interval is still counted).
 */
function treeTicks(t: Table, pid: number | undefined): number {
  if (pid === undefined) return 0;
  const s = t.stats.get(pid);
  if (!s) return 0;
  return s.selfTicks + s.reapedTicks + (t.children.get(pid) ?? []).reduce((a, c) => a + treeTicks(t, c), 0);
}

/**
 * The machine's busy and idle ticks over all its CPUs (the `cpu` line of /proc/stat); NaN when
 * /proc/stat counts other CPUs than this process may use (a container pinned to a few of the host's).
 */
function machineTicks(): { busy: number; idle: number } {
  const lines = readFileSync('/proc/stat', 'utf8').split('\n');
  if (lines.filter((l) => /^cpu\d+ /.test(l)).length !== availableParallelism())
    return { busy: Number.NaN, idle: Number.NaN };
  const line = lines[0] ?? '';
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line.split(/\s+/).slice(1).map(Number);
  const n = (x: number | undefined) => x ?? 0;
  return {
    busy: n(user) + n(nice) + n(system) + n(irq) + n(softirq) + n(steal),
    idle: n(idle) + n(iowait),
  };
}

const toMs = (ticks: number) => (ticks / TICKS_PER_SECOND) * 1000;

/** Reads the CPU used so far by each component of `p`, and the machine's. */
export function readCpu(p: CpuProcesses): CpuReading {
  const t = processTable();
  const machine = machineTicks();
  const sandboxTree = treeTicks(t, p.sandbox);
  const sandboxSelf = p.sandbox === undefined ? 0 : (t.stats.get(p.sandbox)?.selfTicks ?? 0);
  return {
    atMs: Date.now(),
    ms: {
      worker: toMs(
        p.workers.reduce<number>((a, w) => a + treeTicks(t, w), 0) +
          (p.workerReapedByBench ? (t.stats.get(process.pid)?.reapedTicks ?? 0) : 0),
      ),
      sandbox: toMs(sandboxSelf),
      // The anvils are the sandbox's only children (src/sandbox/evm/anvil-process.ts).
      anvil: toMs(sandboxTree - sandboxSelf),
      redis: toMs(p.redis.reduce((a, r) => a + treeTicks(t, r), 0)),
      bench: toMs(t.stats.get(process.pid)?.selfTicks ?? 0),
    },
    machineBusyMs: toMs(machine.busy),
    machineIdleMs: toMs(machine.idle),
  };
}

/**
 * What the interval `a` → `b` cost, by component; `other` is the machine's busy time less the
 * components' (other users of the machine, and processes of the run not named here).
 */
export function cpuSpent(a: CpuReading, b: CpuReading, transfers: number): CpuAccount {
  const d = (k: keyof CpuReading['ms']) => Math.max(0, b.ms[k] - a.ms[k]);
  const ours = {
    worker: d('worker'),
    sandbox: d('sandbox'),
    anvil: d('anvil'),
    redis: d('redis'),
    bench: d('bench'),
  };
  const oursSum = Object.values(ours).reduce((x, y) => x + y, 0);
  return {
    wallMs: b.atMs - a.atMs,
    transfers,
    cores: availableParallelism(),
    ms: {
      ...ours,
      other: Math.max(0, b.machineBusyMs - a.machineBusyMs - oursSum),
      idle: Math.max(0, b.machineIdleMs - a.machineIdleMs),
    },
  };
}

const LABELS: Readonly<Record<CpuComponent, string>> = {
  worker: '`usdc-batch worker` (the product)',
  sandbox: 'sandbox process (service simulator; LiteSVM inside)',
  anvil: 'anvil chains (the sandbox’s child processes)',
  redis: 'redis-server',
  bench: 'the bench process',
  other: 'other processes on the machine',
  idle: 'idle',
};

/** The median over `runs` of component `k`'s CPU ms per transfer. */
export function medianPerTransfer(runs: readonly CpuAccount[], k: CpuComponent): number {
  return median(runs.map((r) => r.ms[k] / r.transfers));
}

/**
 * The report's table of where an interval's CPU went: per group of runs (a column pair each), the
 * median over runs of each component's CPU ms per transfer and its share of the machine's cores
 * (CPU ms / (wall ms × cores)). Empty when no run carries an account (older results).
 */
export function cpuShareTable(
  groups: readonly { label: string; runs: readonly (CpuAccount | undefined)[] }[],
): string[] {
  const withCpu = groups
    .map((g) => ({ label: g.label, runs: g.runs.filter((r): r is CpuAccount => r !== undefined) }))
    .filter((g) => g.runs.length > 0);
  if (withCpu.length === 0) return [];
  const cores = withCpu[0]?.runs[0]?.cores ?? 0;
  const share = (r: CpuAccount, k: CpuComponent) => r.ms[k] / (r.wallMs * r.cores);
  const cells = (k: CpuComponent) =>
    withCpu.map((g) => {
      const perTransfer = k === 'idle' ? '' : fmt(medianPerTransfer(g.runs, k), 2);
      return `${perTransfer} | ${fmt(median(g.runs.map((r) => share(r, k))) * 100, 0)} %`;
    });
  const walls = withCpu.map((g) => `${fmt(median(g.runs.map((r) => r.wallMs)) / 1000, 1)} s`);
  return [
    `| component | ${withCpu.map((g) => `${g.label}: CPU ms / transfer | share of the ${cores} cores`).join(' | ')} |`,
    `|---|${withCpu.map(() => '---|---|').join('')}`,
    ...CPU_COMPONENTS.map((k) => `| ${LABELS[k]} | ${cells(k).join(' | ')} |`),
    `| wall time of the interval | ${walls.map((w) => `${w} |`).join(' | ')} |`,
  ];
}

/**
 * A paragraph and the table (`cpuShareTable`) for a section of the report: `interval` names what
 * was measured (e.g. "from the batch enqueued to its last mint"). No blank line after it; empty for
 * results without accounts.
 */
export function cpuShareLines(
  interval: string,
  groups: readonly { label: string; runs: readonly (CpuAccount | undefined)[] }[],
): string[] {
  const table = cpuShareTable(groups);
  if (table.length === 0) return [];
  return [
    `Where the CPU went, ${interval} (bench/lib/process-cpu.ts, from /proc; medians over runs). A share is the component’s CPU time over the interval’s wall time × the machine’s cores, so the shares of a column add up to about 100 %; the worker is the product’s share, the sandbox and its anvils stand in for the service and the chains, \`other\` is the machine’s busy time outside the named processes (other users of a shared machine).`,
    '',
    ...table,
  ];
}
