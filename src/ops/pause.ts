import { recordAudit } from '../store/audit.ts';
import { clearPause, readPause, writePause, type PauseState } from '../store/pause-flag.ts';
import type { OpsDeps } from './ops-deps.ts';

/**
 * `pause` / `resume`: workers stop taking new transfers while the pause flag is set; it records
 * since when and by whom (the status document's `paused`). An action that changed nothing (a pause
 * while paused, a resume while running) is not audited, and a second pause keeps the first's time
 * and actor. Returns whether it changed anything and the pause now in force.
 */
export async function setPaused(
  deps: Omit<OpsDeps, 'jobs'>,
  paused: boolean,
): Promise<{ changed: boolean; pause: PauseState | null }> {
  const changed = paused
    ? await writePause(deps.redis, deps.prefix, { since: (deps.now ?? Date.now)(), by: deps.actor })
    : await clearPause(deps.redis, deps.prefix);
  if (changed) {
    await recordAudit(deps, { who: deps.actor, action: paused ? 'pause' : 'resume' });
  }
  return { changed, pause: await readPause(deps.redis, deps.prefix) };
}
