import { recordAudit } from '../store/audit.ts';
import { keys } from '../store/keys.ts';
import type { OpsDeps } from './ops-deps.ts';

/** `pause` / `resume`: workers stop taking new transfers while the pause flag is set. */
export async function setPaused(deps: Omit<OpsDeps, 'jobs'>, paused: boolean): Promise<void> {
  const k = keys(deps.prefix);
  if (paused) await deps.redis.set(k.paused, String((deps.now ?? Date.now)()));
  else await deps.redis.del(k.paused);
  await recordAudit(deps.redis, deps.prefix, { actor: deps.actor, action: paused ? 'pause' : 'resume' });
}
