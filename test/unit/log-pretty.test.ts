import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import { prettyLine } from '../../src/log/pretty-line.ts';

/** A logger in `format` whose lines are kept. */
function capture(format: 'json' | 'pretty') {
  const lines: string[] = [];
  const stream = {
    write: (line: string) => void lines.push(format === 'pretty' ? prettyLine(line) : line),
  };
  return { log: createLogger('debug', stream), lines };
}

/*
 * Issue 35, finding 5: the worker and `serve` on a terminal showed raw JSON only. LOG_FORMAT=pretty
 * (the default when stderr is a terminal) writes one readable line per record.
 */
describe('LOG_FORMAT=pretty', () => {
  it('writes one line per record: time, level, message, then the fields as key=value', () => {
    const { log, lines } = capture('pretty');
    log.warn({ batchId: 'b-1', transferId: 't 1', attempts: 3, held: false }, 'transfer failed');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^\d\d:\d\d:\d\d\.\d{3} WARN  transfer failed batchId=b-1 transferId="t 1" attempts=3 held=false\n$/,
    );
  });

  it('keeps a record on one line: newlines and escapes in values are shown escaped, an error as its type and message', () => {
    const { log, lines } = capture('pretty');
    log.error({ err: new TypeError('bad\nthing'), memo: 'two\nlines \u001b[31mred' }, 'it broke');
    expect(lines).toHaveLength(1);
    const [line] = lines;
    expect(line?.split('\n')).toEqual([expect.any(String), '']);
    expect(line).toContain('ERROR it broke');
    expect(line).toContain('err="TypeError: bad\\nthing"');
    expect(line).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/);
    expect(line).not.toContain('    at ');
  });

  it('shows what the JSON shows: secrets are redacted before either is written', () => {
    const pretty = capture('pretty');
    pretty.log.info({ apiKey: 'sk_live_abcdef123456', headers: { authorization: 'Bearer abc' } }, 'calling');
    expect(pretty.lines[0]).not.toContain('sk_live_abcdef123456');
    expect(pretty.lines[0]).not.toContain('Bearer abc');
    expect(pretty.lines[0]).toContain('apiKey=[redacted]');
  });
});
