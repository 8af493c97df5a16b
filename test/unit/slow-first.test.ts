import { describe, expect, it } from 'vitest';
import { readSlowFiles, slowFirst } from '../../scripts/slow-first.ts';
import { slowFilesText } from '../../scripts/test-times.ts';

describe('the order test files start in (scripts/slow-first.ts)', () => {
  it('puts the listed slow files first, slowest first, and keeps the order of the rest', () => {
    const files = ['a', 'b', 'slow-2', 'c', 'slow-1', 'd'];
    const slow = [
      { file: 'slow-1', seconds: 120 },
      { file: 'slow-2', seconds: 60 },
      { file: 'not-in-this-run', seconds: 300 },
    ];
    expect(slowFirst(files, (f) => f, slow)).toEqual(['slow-1', 'slow-2', 'a', 'b', 'c', 'd']);
    expect(slowFirst(files, (f) => f, [])).toEqual(files);
  });

  it('reads the committed list, which names files that exist, slowest first', () => {
    const slow = readSlowFiles();
    expect(slow.length).toBeGreaterThan(5);
    const seconds = slow.map((s) => s.seconds);
    expect(seconds).toEqual([...seconds].sort((a, b) => b - a));
    // The integration project holds the browser tests (test/e2e) too.
    for (const s of slow) expect(s.file).toMatch(/^test\/(integration|e2e)\/[a-z0-9-]+\.test\.ts$/);
  });

  it('writes the list from a run: the slowest integration files only', () => {
    const text = slowFilesText(
      {
        wallSeconds: 10,
        files: [
          { file: 'test/unit/u.test.ts', project: 'unit', seconds: 99, tests: 1, state: 'passed' },
          {
            file: 'test/integration/x.test.ts',
            project: 'integration',
            seconds: 5,
            tests: 1,
            state: 'passed',
          },
          {
            file: 'test/integration/y.test.ts',
            project: 'integration',
            seconds: 50,
            tests: 1,
            state: 'passed',
          },
        ],
      },
      1,
    );
    expect(JSON.parse(text)).toEqual([{ file: 'test/integration/y.test.ts', seconds: 50 }]);
  });
});
