import { recordAudit } from '../store/audit.ts';
import { keys } from '../store/keys.ts';
import type { OpsDeps } from './ops-deps.ts';

/**
 * `pause` / `resume`: workers stop taking new transfers while the pause flag is set. Pausing what is
 * paused, or resuming what runs, changes nothing and is not audited (nor does it move the time the
 * pause began). Returns whether it changed anything.
 */
export async function setPaused(deps: Omit<OpsDeps, 'jobs'>, paused: boolean): Promise<boolean> {
  const k = keys(deps.prefix);
  const changed = paused
    ? (await deps.redis.set(k.paused, String((deps.now ?? Date.now)()), 'NX')) === 'OK'
    : (await deps.redis.del(k.paused)) > 0;
  if (changed) await recordAudit(deps, { who: deps.actor, action: paused ? 'pause' : 'resume' });
  return changed;
}
