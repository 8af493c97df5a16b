import type { Redis } from 'ioredis';
import { keys } from './keys.ts';

/**
 * While a firing of a schedule is held for approval, its later firings are held too (docs/operating.md "Approvals and the address book", issue 18): a nightly file that gained a new address must not be paid the next night because
 * nobody has looked yet. `P:schedule:<name>:held` (SET) names the firings that were held when they
 * fired; one counts while its batch is still held with transfers waiting (approving it, or
 * cancelling all of it, lets the next firings go). Approving one firing approves only that one.
 */
export async function noteHeldFiring(
  redis: Redis,
  prefix: string,
  name: string,
  batchId: string,
): Promise<void> {
  await redis.sadd(keys(prefix).scheduleHeld(name), batchId);
}

/** The schedule's firings still held, oldest first; those no longer held are dropped from the set. */
export async function heldFirings(
  redis: Redis,
  prefix: string,
  name: string,
  options: { except?: string } = {},
): Promise<string[]> {
  const k = keys(prefix);
  const ids = (await redis.smembers(k.scheduleHeld(name))).filter((id) => id !== options.except).sort();
  if (ids.length === 0) return [];
  const pipe = redis.pipeline();
  for (const id of ids) pipe.hmget(k.batch(id), 'held', 'n_queued');
  const res = (await pipe.exec()) ?? [];
  const still: string[] = [];
  const gone: string[] = [];
  ids.forEach((id, i) => {
    const [err, value] = res[i] ?? [null, null];
    if (err) throw err;
    const [held, queued] = (value ?? [null, null]) as [string | null, string | null];
    if (held === '1' && Number(queued ?? 0) > 0) still.push(id);
    else gone.push(id);
  });
  if (gone.length > 0) await redis.srem(k.scheduleHeld(name), ...gone);
  return still;
}
