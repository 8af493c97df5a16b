/*
 * How long each test file takes, so that a file that grows slow is seen. vitest.config.ts runs this
 * module as a reporter: after a run of many files (`npm test`, `npm run test:unit`) it prints the
 * ten slowest and writes every file's time to test-output/test-times.json. docs/development.md
 * keeps the list of a quiet run. `node scripts/test-times.ts [COUNT]` prints the list again from
 * the file; `node scripts/test-times.ts --slow-files` writes test/slow-files.json from it (the
 * order the files start in: scripts/slow-first.ts).
 *
 * A file's time is its own, in the worker that ran it: the harness, the import of the file, its
 * hooks (a stack's start-up in beforeAll) and its tests. vitest's JSON reporter counts only from the
 * first test's start to the last test's end, which leaves out the start-up this list is about.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Reporter, TestModule } from 'vitest/node';
import { SLOW_FILES } from './slow-first.ts';

/** Where the times are written, from the repository's root (git-ignored). */
export const TIMES_FILE = fileURLToPath(new URL('../test-output/test-times.json', import.meta.url));

/** Fewer files than this ran (one file, a few): no list is printed. */
const LIST_FROM_FILES = 20;

export type FileTime = {
  readonly file: string;
  readonly project: string;
  readonly seconds: number;
  readonly tests: number;
  readonly state: string;
};
export type TestTimes = { readonly wallSeconds: number; readonly files: readonly FileTime[] };

/** One module's time: harness, environment, import, setup files, then its tests and hooks. */
export function moduleTime(m: TestModule): FileTime {
  const d = m.diagnostic();
  const ms =
    d.prepareDuration + d.environmentSetupDuration + d.collectDuration + d.setupDuration + d.duration;
  return {
    file: m.relativeModuleId,
    project: m.project.name,
    seconds: Math.round(ms) / 1000,
    tests: [...m.children.allTests()].length,
    state: m.state(),
  };
}

/** The `count` slowest files, the number of files and the run's wall-clock time, as printed. */
export function slowestReport(times: TestTimes, count = 10): string {
  const slowest = [...times.files].sort((a, b) => b.seconds - a.seconds).slice(0, count);
  const width = Math.max(4, ...slowest.map((t) => t.file.length));
  const summed = times.files.reduce((sum, t) => sum + t.seconds, 0);
  return [
    `The ${slowest.length} slowest test files (each one's harness, import, hooks and tests):`,
    ...slowest.map((t) => `${t.seconds.toFixed(1).padStart(7)} s  ${t.file.padEnd(width)}  ${t.tests} tests`),
    `${times.files.length} files in ${times.wallSeconds.toFixed(0)} s (${summed.toFixed(0)} s of file time summed over the lanes).`,
  ].join('\n');
}

/** The reporter vitest.config.ts names: times every file of the run; lists the slowest of a big one. */
export default class TestTimesReporter implements Reporter {
  private started = Date.now();

  onTestRunStart(): void {
    this.started = Date.now();
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const times: TestTimes = {
      wallSeconds: (Date.now() - this.started) / 1000,
      files: modules.map(moduleTime),
    };
    mkdirSync(dirname(TIMES_FILE), { recursive: true });
    writeFileSync(TIMES_FILE, `${JSON.stringify(times, null, 1)}\n`);
    if (times.files.length >= LIST_FROM_FILES) process.stdout.write(`\n${slowestReport(times)}\n`);
  }
}

/** Reads test-output/test-times.json back; says what is wrong with it rather than guessing. */
export function readTimes(file = TIMES_FILE): TestTimes {
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as unknown;
  const ok =
    typeof parsed === 'object' &&
    parsed !== null &&
    typeof (parsed as TestTimes).wallSeconds === 'number' &&
    Array.isArray((parsed as TestTimes).files) &&
    (parsed as TestTimes).files.every((f) => typeof f.file === 'string' && typeof f.seconds === 'number');
  if (!ok) throw new Error(`${file} is not what scripts/test-times.ts writes: run npm test again`);
  return parsed as TestTimes;
}

/**
 * test/slow-files.json's text from a run's times: its integration files, slowest first — every one
 * of them by default. A file left off the list starts after every listed one, in vitest's order (in
 * a fresh clone, with no cache of durations, the largest file first): one that waits a minute on
 * the product's timers, started last, is a minute the other lanes sit idle at the end.
 */
export function slowFilesText(times: TestTimes, count = Number.POSITIVE_INFINITY): string {
  const slow = times.files
    .filter((t) => t.project === 'integration')
    .sort((a, b) => b.seconds - a.seconds)
    .slice(0, count)
    .map((t) => ({ file: t.file, seconds: t.seconds }));
  return `${JSON.stringify(slow, null, 2)}\n`;
}

function main(argv: readonly string[]): number {
  if (argv[0] === '--slow-files') {
    writeFileSync(SLOW_FILES, slowFilesText(readTimes()));
    process.stdout.write(`wrote ${fileURLToPath(SLOW_FILES)}\n`);
    return 0;
  }
  const count = Number(argv[0] ?? 10);
  if (!Number.isInteger(count) || count < 1) {
    process.stderr.write('usage: node scripts/test-times.ts [COUNT]\n');
    return 2;
  }
  try {
    process.stdout.write(`${slowestReport(readTimes(), count)}\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`cannot read the test times (${TIMES_FILE}): ${(err as Error).message}\n`);
    return 1;
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = main(process.argv.slice(2));
