import { spawnSync } from 'node:child_process';
import { cpus, loadavg, totalmem } from 'node:os';

export type Machine = {
  readonly nproc: number;
  readonly cpuModel: string;
  readonly memory: number;
  readonly node: string;
  readonly redis: string;
  readonly os: string;
  readonly loadBefore: string;
  /** The commit measured, and whether the working tree had changes on top of it. */
  readonly commit: string;
};

export function describeMachine(): Machine {
  const nproc = spawnSync('nproc', { encoding: 'utf8' });
  const redis = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  const uname = spawnSync('uname', ['-srm'], { encoding: 'utf8' });
  const head = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' });
  const dirty = spawnSync('git', ['status', '--porcelain'], { encoding: 'utf8' });
  return {
    nproc: Number(nproc.stdout?.trim()) || cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    memory: totalmem(),
    node: process.version,
    redis: /v=([0-9.]+)/.exec(redis.stdout ?? '')?.[1] ?? 'not found',
    os: uname.stdout?.trim() ?? process.platform,
    loadBefore: loadavg()
      .map((l) => l.toFixed(2))
      .join(' '),
    commit:
      head.status === 0
        ? `${head.stdout.trim()}${dirty.stdout?.trim() ? ' + uncommitted changes' : ''}`
        : 'unknown',
  };
}
