import type { Redis } from 'ioredis';
import type { Logger } from '../log/logger.ts';
import { keys } from './keys.ts';
import { luaScriptFile, runScript } from './lua-script.ts';
import { replyString } from './lua-reply.ts';
import { isCluster } from './redis-endpoint.ts';

/*
 * docs/replicated-redis.md: what a process sees of its Redis's replication, read from `INFO
 * replication` every few seconds. A change of the primary's replication id is a failover (a
 * replica promoted: its previous id is the old primary's) or a restart of the primary: logged at
 * warn, since writes the old primary had not replicated are gone. Replicas dropping away are
 * logged too: with REDIS_REPLICA_ACKS=auto, sends wait for them.
 */

const SLOT_REPLICATION = luaScriptFile('slot-replication.lua');

/**
 * `INFO replication` of the primary holding the project's keys: the server itself, or on a Redis
 * Cluster the master that owns the prefix's slot (a script with a key of that slot is sent there).
 */
export async function slotReplication(redis: Redis, prefix: string): Promise<string> {
  if (!isCluster(redis)) return await redis.info('replication');
  return replyString(
    'slot-replication.lua',
    await runScript(redis, SLOT_REPLICATION, [keys(prefix).replicas], []),
  );
}

/** The fields of `INFO replication` this project reads. */
export type Replication = {
  readonly role: string;
  readonly id: string;
  /** The id this server had before it became primary ('000…' when it never was a replica). */
  readonly previousId: string;
  readonly connected: number;
};

export function parseReplication(info: string): Replication {
  const field = (name: string) => new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim() ?? '';
  return {
    role: field('role'),
    id: field('master_replid'),
    previousId: field('master_replid2'),
    connected: Number(field('connected_slaves') || 0),
  };
}

/** What changed between two readings, as log lines (none when nothing did). */
export function replicationChanges(
  before: Replication | undefined,
  now: Replication,
): { readonly level: 'warn' | 'info'; readonly facts: Record<string, unknown>; readonly msg: string }[] {
  if (!before) return [];
  const out: { level: 'warn' | 'info'; facts: Record<string, unknown>; msg: string }[] = [];
  if (before.id !== now.id && now.role === 'master') {
    const promoted = now.previousId === before.id;
    out.push({
      level: 'warn',
      facts: { from: before.id.slice(0, 12), to: now.id.slice(0, 12), promoted },
      msg: promoted
        ? 'Redis failed over: a replica became the primary; writes the old primary had not replicated are gone'
        : 'Redis primary changed (its replication id is new: a restart, or another server)',
    });
  } else if (now.connected < before.connected) {
    out.push({
      level: 'warn',
      facts: { connected: now.connected, before: before.connected },
      msg: 'a Redis replica disconnected: sends wait for the replicas REDIS_REPLICA_ACKS asks for',
    });
  } else if (now.connected > before.connected) {
    out.push({ level: 'info', facts: { connected: now.connected }, msg: 'a Redis replica connected' });
  }
  return out;
}

/** Reads `INFO replication` every `intervalMs` and logs what changed; `stop()` ends it. */
export function watchPrimary(deps: {
  readonly redis: Redis;
  readonly prefix: string;
  readonly logger: Logger;
  readonly intervalMs?: number;
}): { stop(): void; latest(): Replication | undefined } {
  let last: Replication | undefined;
  let busy = false;
  const look = async () => {
    if (busy) return;
    busy = true;
    try {
      const now = parseReplication(await slotReplication(deps.redis, deps.prefix));
      for (const c of replicationChanges(last, now)) deps.logger[c.level](c.facts, c.msg);
      if (now.role === 'master') last = now;
    } catch {
      // Redis unreachable meanwhile: its connection logs that; the next reading tells what changed.
    } finally {
      busy = false;
    }
  };
  void look();
  const timer = setInterval(() => void look(), deps.intervalMs ?? 1_000);
  timer.unref();
  return {
    stop: () => clearInterval(timer),
    latest: () => last,
  };
}
