import { ConfigError } from '../../domain/errors.ts';
import { fileStamp, readListFile, type LoadedList } from './list-file.ts';

/*
 * The sanctions lists in force (docs/screening.md): SCREENING_LISTS' files, read at start (one that
 * cannot be read or parsed is a configuration error naming it), read again when a file changes or
 * on demand (SIGHUP); a file that then fails leaves its list in force. A lookup is a hash table's, per list (domain/address-set.ts).
 */

/** The list in force that names an address, and its date of issue. */
export type ListHit = { readonly list: string; readonly date: string };

/** What a reload did: the lists read again, and the files that failed (their lists kept). */
export type ReloadReport = {
  readonly reloaded: readonly LoadedList[];
  readonly failed: readonly { readonly name: string; readonly message: string }[];
};

export type ScreeningLists = {
  /** The lists in force, in SCREENING_LISTS' order. */
  lists(): readonly LoadedList[];
  /** The first list in force naming the address (EVM compared without regard to case). */
  lookup(address: string): ListHit | undefined;
  /** Why screening is stale at `now` (a list older than SCREENING_MAX_AGE), or undefined. */
  staleReason(now: number): string | undefined;
  /** The oldest list's age at `now`, seconds; undefined without lists. */
  ageSeconds(now: number): number | undefined;
  /** Reads again the files whose modification time or size changed (every file with `all`). */
  reload(all: boolean): Promise<ReloadReport>;
};

/** Reads every file; a file that fails is a ConfigError naming SCREENING_LISTS and the file. */
export async function loadScreeningLists(
  paths: readonly string[],
  maxAgeMs: number,
): Promise<ScreeningLists> {
  const loaded: LoadedList[] = [];
  const problems: { variable: string; message: string }[] = [];
  for (const path of paths) {
    try {
      loaded.push(await readListFile(path));
    } catch (err) {
      problems.push({ variable: 'SCREENING_LISTS', message: `${path}: ${messageOf(err)}` });
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return createScreeningLists(loaded, maxAgeMs);
}

/** The holder over lists already read (loadScreeningLists; tests). */
export function createScreeningLists(initial: readonly LoadedList[], maxAgeMs: number): ScreeningLists {
  let lists = [...initial];
  return {
    lists: () => lists,
    lookup(address) {
      const hit = lists.find((l) => l.keys.has(address));
      return hit && { list: hit.name, date: hit.date };
    },
    staleReason(now) {
      const old = lists.filter((l) => now - l.issuedAt > maxAgeMs);
      if (old.length === 0) return undefined;
      const names = old.map((l) => `${l.name} of ${l.date}`).join(', ');
      return `screening is stale: ${names} older than SCREENING_MAX_AGE (${Math.round(maxAgeMs / 3_600_000)} h); load a fresh list`;
    },
    ageSeconds(now) {
      if (lists.length === 0) return undefined;
      return Math.max(...lists.map((l) => Math.max(0, Math.floor((now - l.issuedAt) / 1000))));
    },
    async reload(all) {
      const report = await reloadChanged(lists, all);
      const byName = new Map(report.reloaded.map((l) => [l.name, l]));
      lists = lists.map((l) => byName.get(l.name) ?? l);
      return report;
    },
  };
}

/** Reads again the changed files (all with `all`); nothing in force changes here. */
async function reloadChanged(lists: readonly LoadedList[], all: boolean): Promise<ReloadReport> {
  const reloaded: LoadedList[] = [];
  const failed: { name: string; message: string }[] = [];
  for (const list of lists) {
    try {
      if (!all && (await fileStamp(list.name)) === list.stamp) continue;
      reloaded.push(await readListFile(list.name));
    } catch (err) {
      failed.push({ name: list.name, message: messageOf(err) });
    }
  }
  return { reloaded, failed };
}

/** Looks at the files every `everyMs` and reloads those that changed; returns the stop. */
export function watchScreeningLists(
  lists: ScreeningLists,
  everyMs: number,
  onReload: (report: ReloadReport) => void,
): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    lists
      .reload(false)
      .then(onReload, () => {})
      .finally(() => (running = false));
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

function messageOf(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  if (e.code === 'ENOENT') return 'no such file';
  if (e.code === 'EACCES') return 'cannot be read (permission denied)';
  if (e.code === 'EISDIR') return 'is a directory';
  return (e.message ?? String(err)).slice(0, 300);
}
