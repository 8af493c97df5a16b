import type { Redis } from 'ioredis';

/** `INFO <section>` as a map of field → value. */
export async function info(redis: Redis, section: string): Promise<Map<string, string>> {
  const text = await redis.info(section);
  const out = new Map<string, string>();
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) out.set(line.slice(0, colon), line.slice(colon + 1));
  }
  return out;
}

/**
 * Calls per command since the last `CONFIG RESETSTAT` (the bench's own INFO/CONFIG calls left out,
 * and a replica's REPLCONF: the replication stream's acknowledgements, sent by the replica itself
 * about once a second and whenever a WAIT asks, are Redis's traffic, not the project's commands).
 */
export async function commandCalls(redis: Redis): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const [key, value] of await info(redis, 'commandstats')) {
    const name = key.replace(/^cmdstat_/, '');
    if (name === 'info' || name === 'config' || name === 'replconf') continue;
    const calls = /calls=([0-9]+)/.exec(value)?.[1];
    if (calls !== undefined) out.set(name, Number(calls));
  }
  return out;
}

/** The calls with `n` of command `name` taken out: the bench's own polls, not the product's commands. */
export function withoutOwn(calls: Map<string, number>, name: string, n: number): Map<string, number> {
  const out = new Map(calls);
  out.set(name, Math.max(0, (out.get(name) ?? 0) - n));
  return out;
}

export function totalCalls(calls: Map<string, number>): number {
  let n = 0;
  for (const v of calls.values()) n += v;
  return n;
}

/** The `top` commands by calls, as `evalsha 12.3, hset 4.0` per `per` (e.g. per transfer). */
export function topCommands(calls: Map<string, number>, per: number, top = 8): string {
  return [...calls.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, n]) => `${name} ${(n / per).toFixed(1)}`)
    .join(', ');
}

/**
 * Read events Redis has processed (`INFO stats` total_reads_processed): one per round trip a client
 * makes, however many commands its write carries (a pipeline, an auto-pipelined turn).
 */
export async function readEvents(redis: Redis): Promise<number> {
  return Number((await info(redis, 'stats')).get('total_reads_processed') ?? Number.NaN);
}

export async function usedMemory(redis: Redis): Promise<number> {
  return Number((await info(redis, 'memory')).get('used_memory') ?? Number.NaN);
}

/**
 * `used_memory` with the server's latency histograms emptied and its clients' buffers and the AOF
 * buffer left out, the Lua script cache's part of it, and what the histograms held just before
 * (`used_memory` before the reset − after).
 */
export type SettledMemory = { readonly used: number; readonly scripts: number; readonly histograms: number };

/**
 * `used_memory` after `CONFIG RESETSTAT`, so that it holds data, not statistics: Redis 7 keeps a
 * latency histogram for every command name it has run since the last reset (`latency-tracking`, on
 * by default), ~27 KB each — ~1.5 MB once a worker's scripts have run some 55 commands, a fixed cost
 * of the server that a per-transfer figure must not divide by its rows (section 4's 2,000-row batch
 * read ~0.4 KiB a transfer more without it, from its following phase's alone). The reset also
 * clears `INFO commandstats`: read the phase's
 * calls first. `scripts` is `used_memory_scripts`, the Lua script cache: fixed too, shown apart.
 * The connected clients' query and output buffers (`mem_clients_normal`, `mem_clients_slaves`) and
 * the AOF buffer (`mem_aof_buffer`) are not data either: they come and go with the traffic of the
 * moment (a running worker's ~20 connections moved `used_memory` by ±170 KB between two readings
 * of section 12, ±4 KiB a transfer of its 40-row batch), so they are left out.
 */
export async function settledMemory(redis: Redis): Promise<SettledMemory> {
  const before = await usedMemory(redis);
  await redis.config('RESETSTAT');
  const m = await info(redis, 'memory');
  const field = (name: string) => Number(m.get(name) ?? Number.NaN);
  const all = field('used_memory');
  const buffers = field('mem_clients_normal') + field('mem_clients_slaves') + field('mem_aof_buffer');
  return { used: all - buffers, scripts: field('used_memory_scripts'), histograms: before - all };
}

/** Σ `MEMORY USAGE … SAMPLES 0` of the keys matching `match` (a SCAN pattern). */
export async function matchedBytes(redis: Redis, match: string): Promise<number> {
  let sum = 0;
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', match, 'COUNT', 1000);
    cursor = next;
    for (const key of found) sum += Number(await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
  } while (cursor !== '0');
  return sum;
}

export async function redisVersion(redis: Redis): Promise<string> {
  return (await info(redis, 'server')).get('redis_version') ?? 'unknown';
}
