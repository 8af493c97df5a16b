import { createHash } from 'node:crypto';

/*
 * The controls a process enforces, as named settings (docs/promises.md, promise 5): the worker —
 * the one process that signs — enforces its own whatever the enqueuing process thought, and every
 * process publishes the digest of its controls, so that one whose controls differ from the running
 * workers' can say so, naming the settings.
 */

/** One control setting as its variable's name and its value as shown (`none` when unset). */
export type ControlSetting = { readonly name: string; readonly value: string };

/** The lowercase hex SHA-256 of the lines `NAME=value\n`, sorted by name. */
export function controlDigest(settings: readonly ControlSetting[]): string {
  const lines = [...settings]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((s) => `${s.name}=${s.value}\n`)
    .join('');
  return createHash('sha256').update(lines, 'utf8').digest('hex');
}

/** A setting whose value differs between two processes (absent on one side: `none`). */
export type SettingDifference = { readonly name: string; readonly here: string; readonly there: string };

/** The settings of `here` and `there` whose values differ, by name. */
export function differingSettings(
  here: readonly ControlSetting[],
  there: readonly ControlSetting[],
): SettingDifference[] {
  const theirs = new Map(there.map((s) => [s.name, s.value]));
  const mine = new Map(here.map((s) => [s.name, s.value]));
  const names = [...new Set([...mine.keys(), ...theirs.keys()])].sort();
  return names.flatMap((name) => {
    const a = mine.get(name) ?? 'none';
    const b = theirs.get(name) ?? 'none';
    return a === b ? [] : [{ name, here: a, there: b }];
  });
}
