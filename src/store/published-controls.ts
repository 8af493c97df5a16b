import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import type { ControlSetting } from '../domain/control-digest.ts';
import type { Logger } from '../log/logger.ts';
import { keys } from './keys.ts';

/*
 * The controls each process runs with (docs/promises.md, promise 5; docs/data-model.md
 * `P:controls`): a HASH whose fields are processes, `<role>:<host>:<pid>:<random>`, and whose values
 * are `{ role, digest, settings, at }` (JSON). Long-running processes (`worker`, `serve`) refresh
 * theirs every PUBLISH_EVERY_MS and take it out when they stop; a command of the command line
 * publishes once. What the running workers enforce is read from the workers' fresh entries.
 */

export const PUBLISH_EVERY_MS = 10_000;
/** An entry refreshed within this is a running process's. */
export const FRESH_MS = 35_000;
/** Entries not refreshed for a day are removed by the next publication (a killed process says no goodbye). */
const FORGET_AFTER_MS = 24 * 3600 * 1000;

export type ControlRole = 'worker' | 'api' | 'cli';

/** One process's published controls. */
export type PublishedControls = {
  readonly process: string;
  readonly role: ControlRole;
  readonly digest: string;
  readonly settings: readonly ControlSetting[];
  /** When it was published (ms). */
  readonly at: number;
};

/** A name for this process's entry. */
export function controlsMember(role: ControlRole): string {
  return `${role}:${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

/** Writes this process's entry, stamped `now`, and drops entries not refreshed for a day. */
export async function publishControls(
  redis: Redis,
  prefix: string,
  entry: Omit<PublishedControls, 'at'>,
  now: number,
): Promise<void> {
  const key = keys(prefix).controls;
  const value = JSON.stringify({ role: entry.role, digest: entry.digest, settings: entry.settings, at: now });
  await redis.hset(key, entry.process, value);
  const all = await redis.hgetall(key);
  const old = Object.entries(all)
    .filter(([, v]) => (parseEntry('', v)?.at ?? 0) < now - FORGET_AFTER_MS)
    .map(([field]) => field);
  if (old.length > 0) await redis.hdel(key, ...old);
}

/** Takes this process's entry out (it stops). */
export async function withdrawControls(redis: Redis, prefix: string, process: string): Promise<void> {
  await redis.hdel(keys(prefix).controls, process);
}

/** The running workers' entries (refreshed within FRESH_MS of `now`), oldest process first. */
export async function runningWorkerControls(
  redis: Redis,
  prefix: string,
  now: number,
): Promise<PublishedControls[]> {
  const all = await redis.hgetall(keys(prefix).controls);
  return Object.entries(all)
    .flatMap(([field, value]) => {
      const e = parseEntry(field, value);
      return e && e.role === 'worker' && e.at >= now - FRESH_MS ? [e] : [];
    })
    .sort((a, b) => (a.process < b.process ? -1 : 1));
}

function parseEntry(process: string, value: string): PublishedControls | undefined {
  try {
    const v = JSON.parse(value) as Partial<PublishedControls>;
    if (typeof v.digest !== 'string' || typeof v.at !== 'number' || !Array.isArray(v.settings))
      return undefined;
    const settings = v.settings.filter(
      (s): s is ControlSetting => typeof s?.name === 'string' && typeof s?.value === 'string',
    );
    const role = v.role === 'worker' || v.role === 'api' || v.role === 'cli' ? v.role : 'cli';
    return { process, role, digest: v.digest, settings, at: v.at };
  } catch {
    return undefined;
  }
}

/**
 * A long-running process's entry: published now, every PUBLISH_EVERY_MS, and taken out by `stop`.
 * A publication that fails is logged at `warn` and tried again at the next beat.
 */
export function startControlsPublisher(deps: {
  readonly redis: Redis;
  readonly prefix: string;
  readonly role: ControlRole;
  readonly digest: string;
  readonly settings: readonly ControlSetting[];
  readonly logger: Logger;
}): { readonly process: string; stop(): Promise<void> } {
  const process = controlsMember(deps.role);
  const entry = { process, role: deps.role, digest: deps.digest, settings: deps.settings };
  const beat = () =>
    publishControls(deps.redis, deps.prefix, entry, Date.now()).catch((err: unknown) =>
      deps.logger.warn({ err: { message: (err as Error).message } }, 'could not publish the controls'),
    );
  void beat();
  const timer = setInterval(() => void beat(), PUBLISH_EVERY_MS);
  timer.unref();
  return {
    process,
    async stop() {
      clearInterval(timer);
      await withdrawControls(deps.redis, deps.prefix, process).catch(() => {});
    },
  };
}
