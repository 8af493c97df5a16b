import type { Redis } from 'ioredis';
import {
  controlDigest,
  differingSettings,
  type ControlSetting,
  type SettingDifference,
} from '../domain/control-digest.ts';
import type { Logger } from '../log/logger.ts';
import { runningWorkerControls } from '../store/published-controls.ts';

/**
 * Whether this process's controls differ from the running workers' (docs/promises.md, promise 5):
 * the workers enforce theirs before signing, whatever this process decided at enqueue, so an
 * operator should know when the two are not the same. `status` and `serve`, `enqueue`,
 * `rebalance` and `worker` at their start say so; `screening` may too (this is its function).
 */
export type ControlDrift = {
  /** Each setting that differs from the workers' (the first differing worker's, by process name). */
  readonly differences: readonly SettingDifference[];
  /** Running workers whose controls differ from this process's, of `workers`. */
  readonly differingWorkers: number;
  readonly workers: number;
  /** One line for people: `this process's controls differ from the running workers': …`. */
  readonly text: string;
};

/** null: no worker runs, or every running worker has these controls. */
export async function controlDrift(deps: {
  readonly redis: Redis;
  readonly prefix: string;
  readonly settings: readonly ControlSetting[];
  /** This process's own entry, when it is a worker (it is not compared with itself). */
  readonly self?: string | undefined;
  readonly now?: number;
}): Promise<ControlDrift | null> {
  const workers = (await runningWorkerControls(deps.redis, deps.prefix, deps.now ?? Date.now())).filter(
    (w) => w.process !== deps.self,
  );
  const digest = controlDigest(deps.settings);
  const differing = workers.filter((w) => w.digest !== digest);
  const first = differing[0];
  if (!first) return null;
  const differences = differingSettings(deps.settings, first.settings);
  const shown = differences.map((d) => `${d.name} (here ${d.here}, workers ${d.there})`).join(', ');
  const some = differing.length < workers.length ? ` (${differing.length} of ${workers.length} workers)` : '';
  return {
    differences,
    differingWorkers: differing.length,
    workers: workers.length,
    text: `this process's controls differ from the running workers'${some}: ${shown || 'settings this version does not know'}; the workers enforce theirs before signing`,
  };
}

/** Logs the drift at `warn`, naming the settings; returns it (null when there is none). */
export async function warnOnControlDrift(
  deps: Parameters<typeof controlDrift>[0] & { readonly logger: Logger },
): Promise<ControlDrift | null> {
  const drift = await controlDrift(deps);
  if (drift) {
    deps.logger.warn(
      {
        settings: drift.differences.map((d) => d.name),
        differences: drift.differences,
        workers: drift.workers,
        differingWorkers: drift.differingWorkers,
      },
      drift.text,
    );
  }
  return drift;
}
