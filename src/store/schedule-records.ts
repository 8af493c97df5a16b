import type { Redis } from 'ioredis';
import { isTransferRoad, type TransferRoad } from '../domain/roads.ts';
import { keys } from './keys.ts';
import { luaScriptFile, runScript } from './lua-script.ts';

/**
 * A schedule's record in Redis (docs/operating.md "Operations", schedules): `P:schedule:<name>` (HASH: cron, tz,
 * csv or policy and policy_file, created_at, created_by, rows, total, last_*), its name in
 * `P:schedules` (SET). Read back as a ScheduleRecord here, at the store's edge.
 */
export type ScheduleRecord = {
  readonly name: string;
  readonly cron: string;
  readonly tz: string;
  readonly createdAt: number;
  readonly createdBy: string;
  readonly rows: number;
  /** micro-USDC */
  readonly total: bigint;
  readonly lastFiredAt: number | null;
  readonly lastBatch: string | null;
  readonly lastStatus: string | null;
  readonly lastError: string | null;
  /** `rebalance`: each firing plans afresh from a stored rebalancing policy; `csv`: a stored file. */
  readonly kind: 'csv' | 'rebalance';
  /** The stored policy's text (a rebalance schedule), else null. */
  readonly policy: string | null;
  /** The policy file's name as given to `schedule add` (its default policy name comes from it). */
  readonly policyFile: string | null;
  /** A CSV schedule's road (`schedule add --via`); null: TRANSFER_VIA at each firing (a policy names its own). */
  readonly via: TransferRoad | null;
};

/** The stored `via`, or null when absent (or not a road). */
function roadOf(value: string | null | undefined): TransferRoad | null {
  return value !== undefined && value !== null && isTransferRoad(value) ? value : null;
}

export function toScheduleRecord(name: string, h: Record<string, string>): ScheduleRecord {
  const num = (v: string | undefined) => (v === undefined || v === '' ? null : Number(v));
  return {
    name,
    cron: h['cron'] ?? '',
    tz: h['tz'] ?? 'UTC',
    createdAt: Number(h['created_at'] ?? 0),
    createdBy: h['created_by'] ?? '',
    rows: Number(h['rows'] ?? 0),
    total: BigInt(h['total'] ?? '0'),
    lastFiredAt: num(h['last_fired_at']),
    lastBatch: h['last_batch'] || null,
    lastStatus: h['last_status'] || null,
    lastError: h['last_error'] || null,
    kind: h['policy'] ? 'rebalance' : 'csv',
    policy: h['policy'] || null,
    policyFile: h['policy_file'] || null,
    via: roadOf(h['via']),
  };
}

/** What a new or replacing schedule stores. */
export type ScheduleRecordInput = {
  readonly name: string;
  readonly cron: string;
  readonly tz: string;
  /** The CSV of a file schedule… */
  readonly csv?: string | undefined;
  /** …or the text and file name of a rebalancing policy. */
  readonly policy?: { readonly text: string; readonly file: string } | undefined;
  readonly createdAt: number;
  readonly createdBy: string;
  readonly rows: number;
  readonly total: bigint;
  /** A CSV schedule's road; absent: TRANSFER_VIA at each firing. */
  readonly via?: TransferRoad | undefined;
};

/** Writes the record (a replacement starts a new history) and names it in the set; whether one existed. */
export async function writeScheduleRecord(
  redis: Redis,
  prefix: string,
  s: ScheduleRecordInput,
): Promise<boolean> {
  const k = keys(prefix);
  const [[, existed]] = (await redis
    .multi()
    .exists(k.schedule(s.name))
    // A replacement starts a new history: the last firing shown must be of this definition.
    .del(k.schedule(s.name))
    .hset(k.schedule(s.name), {
      cron: s.cron,
      tz: s.tz,
      ...(s.policy ? { policy: s.policy.text, policy_file: s.policy.file } : { csv: s.csv ?? '' }),
      created_at: String(s.createdAt),
      created_by: s.createdBy,
      rows: String(s.rows),
      total: s.total.toString(),
      ...(s.via !== undefined ? { via: s.via } : {}),
    })
    .sadd(k.schedules, s.name)
    .exec()) as [[Error | null, number], ...unknown[]];
  return existed === 1;
}

/** The names of the stored schedules, sorted. */
export async function scheduleNames(redis: Redis, prefix: string): Promise<string[]> {
  return (await redis.smembers(keys(prefix).schedules)).sort();
}

/** The schedule's record, or undefined when it has none (or one without a cron). */
export async function readScheduleRecord(
  redis: Redis,
  prefix: string,
  name: string,
): Promise<ScheduleRecord | undefined> {
  const h = await redis.hgetall(keys(prefix).schedule(name));
  if (!h['cron']) return undefined;
  return toScheduleRecord(name, h);
}

/** Deletes the record, its held firings and its name; whether a record was deleted. */
export async function deleteScheduleRecord(redis: Redis, prefix: string, name: string): Promise<boolean> {
  const k = keys(prefix);
  const [[, deleted]] = (await redis
    .multi()
    .del(k.schedule(name))
    .del(k.scheduleHeld(name))
    .srem(k.schedules, name)
    .exec()) as [[Error | null, number], ...unknown[]];
  return deleted === 1;
}

/** What a firing makes its batch from: the stored CSV, or a rebalancing policy and its file name. */
export type FiringSource = {
  readonly csv: string | null;
  readonly policy: string | null;
  readonly policyFile: string | null;
  /** A CSV schedule's road; null: TRANSFER_VIA. */
  readonly via: TransferRoad | null;
};

export async function readFiringSource(redis: Redis, prefix: string, name: string): Promise<FiringSource> {
  const [csv, policy, policyFile, via] = await redis.hmget(
    keys(prefix).schedule(name),
    'csv',
    'policy',
    'policy_file',
    'via',
  );
  return { csv: csv ?? null, policy: policy ?? null, policyFile: policyFile ?? null, via: roadOf(via) };
}

/** Sets the `last_*` fields only while the record exists: a firing must not resurrect a removed schedule. */
const SET_IF_EXISTS = luaScriptFile('schedule-note-firing.lua');

/** Sets a firing's `last_*` fields on the record, only while the record exists. */
export async function noteScheduleFiring(
  redis: Redis,
  prefix: string,
  name: string,
  fields: Record<string, string>,
): Promise<void> {
  const flat = Object.entries(fields).flat();
  await runScript(redis, SET_IF_EXISTS, [keys(prefix).schedule(name)], flat);
}
