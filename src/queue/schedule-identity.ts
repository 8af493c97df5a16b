import { createHash } from 'node:crypto';
import { CronExpressionParser } from 'cron-parser';
import { errorMessage } from '../domain/errors.ts';
import type { ValidatedInput } from '../ingest/validate-input.ts';

/**
 * A schedule's names and times: its name's shape, its cron and time zone, and the ids a firing
 * derives from its scheduled time (its batch id, its rows' payout ids), so a re-run lands on the
 * same batch and pays no row twice.
 */

/** No `.`: scoped payout ids use it as the separator between the firing and the row id. */
// A firing's batch id is `<name>-<time>`, so a name starts with a letter or digit as batch ids do.
export const SCHEDULE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$/;

export type ScheduleSpecCheck = { ok: true; next: number } | { ok: false; message: string };

/** Checks a cron expression (5 fields, or 6 with seconds) and an IANA time zone as BullMQ will use them. */
export function checkScheduleSpec(cron: string, tz: string, now: number = Date.now()): ScheduleSpecCheck {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
  } catch {
    return {
      ok: false,
      message: `unknown time zone "${tz.slice(0, 60)}" (use an IANA name such as Europe/Paris)`,
    };
  }
  if (cron.trim() === '' || cron.length > 200)
    return { ok: false, message: 'the cron expression is empty or too long' };
  const fields = cronFields(cron);
  if (fields !== undefined && fields.length !== 5 && fields.length !== 6) {
    return {
      ok: false,
      message: `invalid cron expression "${cron.slice(0, 60)}": it has ${fields.length} field${fields.length === 1 ? '' : 's'}; it needs 5 (${FIELD_NAMES.join(' ')}) or 6 (second first)`,
    };
  }
  try {
    const next = CronExpressionParser.parse(cron, { tz, currentDate: new Date(now) })
      .next()
      .getTime();
    return { ok: true, next };
  } catch (err) {
    const reason = (fields && outOfRange(fields)) ?? errorMessage(err);
    return { ok: false, message: `invalid cron expression "${cron.slice(0, 60)}": ${reason}` };
  }
}

/** The five fields of a cron expression, in order; a sixth (seconds) comes before them. */
const FIELD_NAMES = ['minute', 'hour', 'day-of-month', 'month', 'day-of-week'] as const;
const FIELD_RANGES: Readonly<Record<string, readonly [number, number]>> = {
  second: [0, 59],
  minute: [0, 59],
  hour: [0, 23],
  'day-of-month': [1, 31],
  month: [1, 12],
  'day-of-week': [0, 7],
};

/** The expression's fields split on spaces; undefined for a macro such as `@daily`. */
function cronFields(cron: string): string[] | undefined {
  const text = cron.trim();
  return text.startsWith('@') ? undefined : text.split(/\s+/);
}

/**
 * `minute: 61 is out of range 0-59`: the first field holding a value outside its own range (the
 * parser's own message names only the range, which several fields share), or undefined.
 */
function outOfRange(fields: readonly string[]): string | undefined {
  const names = fields.length === 6 ? ['second', ...FIELD_NAMES] : [...FIELD_NAMES];
  for (const [i, field] of fields.entries()) {
    const name = names[i];
    const range = name === undefined ? undefined : FIELD_RANGES[name];
    if (!range) continue;
    // The values of its parts (`1-5`, `7`, `*/10`), not a step after `/` nor the n of `#n`.
    const values = field
      .split(',')
      .flatMap((part) => (part.split(/[/#]/)[0] ?? '').split('-'))
      .filter((v) => /^[0-9]+$/.test(v))
      .map(Number);
    const bad = values.find((v) => v < range[0] || v > range[1]);
    if (bad !== undefined) return `${name}: ${bad} is out of range ${range[0]}-${range[1]}`;
  }
  return undefined;
}

/** A schedule's next firing after `now` (ms), as its scheduler computes it; null when it has none. */
export function nextFiring(cron: string, tz: string, now: number = Date.now()): number | null {
  const spec = checkScheduleSpec(cron, tz, now);
  return spec.ok ? spec.next : null;
}

/** `NAME-YYYYMMDDTHHMMSSZ`, from the firing's scheduled time in UTC. */
export function firingBatchId(name: string, scheduledAt: number): string {
  const iso = new Date(scheduledAt).toISOString(); // 2025-01-31T02:00:00.000Z
  return `${name}-${iso.slice(0, 19).replace(/[-:]/g, '')}Z`;
}

/** Whether `batchId` is a firing of the schedule `name` (the likely-duplicate rule ignores those). */
export function isFiringOf(name: string, batchId: string): boolean {
  return (
    batchId.length === name.length + 17 &&
    batchId.startsWith(`${name}-`) &&
    /^[0-9]{8}T[0-9]{6}Z$/.test(batchId.slice(name.length + 1))
  );
}

/**
 * The payout id of a row of a firing: `<batchId>.<id>`, so each firing claims (and pays) each row
 * once and the next firing pays again. When that is longer than a payout id may be (64), a digest
 * of the pair replaces the batch id; it starts with `h` and a hex digest followed by `.`, which no
 * `<batchId>.` prefix can (a firing's batch id has `-` right after its name), so the two forms never
 * collide, and the digest covers the whole id, so truncating the readable part loses no uniqueness.
 */
export function scopedPayoutId(batchId: string, id: string): string {
  const full = `${batchId}.${id}`;
  if (full.length <= 64) return full;
  const digest = createHash('sha256').update(`${batchId}/${id}`).digest('hex').slice(0, 24);
  return `h${digest}.${id}`.slice(0, 64);
}

/** The validated rows with their payout ids scoped to the firing (rows without id keep `line-N`). */
export function scopeToFiring(input: ValidatedInput, batchId: string): ValidatedInput {
  return {
    ...input,
    transfers: input.transfers.map((t) => (t.hasPayoutId ? { ...t, id: scopedPayoutId(batchId, t.id) } : t)),
  };
}
