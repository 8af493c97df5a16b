/*
 * Dates of sanctions lists (docs/screening.md): a list's date of issue as a day, UTC. How listed
 * addresses and recipients are compared is domain/address-set.ts.
 */

/** A list's date of issue as `YYYY-MM-DD` (UTC) from a time in ms. */
export function isoDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** `YYYY-MM-DD` as the time in ms of that day's start (UTC); undefined when not a real date. */
export function dayOf(year: number, month: number, day: number): number | undefined {
  if (!Number.isInteger(year) || !Number.isInteger(month) || !Number.isInteger(day)) return undefined;
  const ms = Date.UTC(year, month - 1, day);
  const d = new Date(ms);
  if (d.getUTCFullYear() !== year || d.getUTCMonth() !== month - 1 || d.getUTCDate() !== day)
    return undefined;
  return ms;
}
