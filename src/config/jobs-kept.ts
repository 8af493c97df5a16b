/**
 * How long and how many finished transfer jobs BullMQ keeps (TRANSFER_JOBS_KEPT): `AGE/COUNT` for
 * completed jobs, then for failed ones, per queue — e.g. `1d/1000,7d/100000`. AGE is a whole number
 * of seconds, minutes, hours or days (`30s`, `15m`, `12h`, `7d`); COUNT the newest jobs kept.
 * Either bound trims: a job older than AGE, or beyond the COUNT newest, goes as the next job finishes.
 */
export type JobsKeptBy = { readonly ageSeconds: number; readonly count: number };
export type JobsKept = { readonly completed: JobsKeptBy; readonly failed: JobsKeptBy };

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };
const PAIR = /^([0-9]{1,6})([smhd])\/([0-9]{1,9})$/;

export const JOBS_KEPT_FORM =
  'must be AGE/COUNT for completed jobs, then for failed ones (e.g. 1d/1000,7d/100000; AGE a whole number with s, m, h or d)';

function parsePair(text: string): JobsKeptBy | undefined {
  const m = PAIR.exec(text.trim());
  if (!m) return undefined;
  const ageSeconds = Number(m[1]) * (UNIT_SECONDS[m[2] as string] as number);
  const count = Number(m[3]);
  return ageSeconds > 0 ? { ageSeconds, count } : undefined;
}

/** The setting's text as JobsKept, or undefined when it is not of the form (JOBS_KEPT_FORM). */
export function parseJobsKept(text: string): JobsKept | undefined {
  const parts = text.split(',');
  if (parts.length !== 2) return undefined;
  const completed = parsePair(parts[0] as string);
  const failed = parsePair(parts[1] as string);
  return completed && failed ? { completed, failed } : undefined;
}
