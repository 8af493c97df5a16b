/*
 * The order vitest starts the files of a project in (vitest.config.ts `sequence.sequencer`): the
 * slowest files first, so that the lanes end together instead of one starting a two-minute file
 * when the others are done. Each integration file's time is written down in test/slow-files.json
 * (a run's times on the 2-core machine; `node scripts/test-times.ts --slow-files` writes it again
 * from the last `npm test`). Files not listed (one added since) follow, in vitest's own order (the
 * durations of its cache where it has them, else the largest file first). Nothing is skipped or
 * split: only the start order changes.
 */
import { readFileSync } from 'node:fs';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** The committed list: repository-relative paths and their seconds, slowest first. */
export const SLOW_FILES = new URL('../test/slow-files.json', import.meta.url);

export type SlowFile = { readonly file: string; readonly seconds: number };

/** Reads test/slow-files.json; a missing or malformed list orders nothing (vitest's order stands). */
export function readSlowFiles(url: URL = SLOW_FILES): readonly SlowFile[] {
  try {
    const parsed = JSON.parse(readFileSync(url, 'utf8')) as unknown;
    if (!Array.isArray(parsed)) return [];
    return parsed.filter(
      (f): f is SlowFile =>
        typeof f === 'object' && f !== null && typeof f.file === 'string' && typeof f.seconds === 'number',
    );
  } catch {
    return [];
  }
}

/**
 * `files` (one project's, in vitest's order) with the listed slow ones first, slowest first; the
 * rest keep their order after them (Array.prototype.sort is stable).
 */
export function slowFirst<T>(files: readonly T[], pathOf: (f: T) => string, slow: readonly SlowFile[]): T[] {
  const seconds = new Map(slow.map((s) => [s.file, s.seconds]));
  return [...files].sort((a, b) => (seconds.get(pathOf(b)) ?? -1) - (seconds.get(pathOf(a)) ?? -1));
}

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const ordered = await super.sort(files);
    const slow = readSlowFiles();
    const root = `${this.ctx.config.root}/`;
    const out: TestSpecification[] = [];
    // Within each run of files of one project (vitest's groups), the slow ones first.
    for (let i = 0; i < ordered.length;) {
      let j = i;
      while (j < ordered.length && ordered[j]!.project.name === ordered[i]!.project.name) j++;
      out.push(...slowFirst(ordered.slice(i, j), (s) => s.moduleId.replace(root, ''), slow));
      i = j;
    }
    return out;
  }
}
