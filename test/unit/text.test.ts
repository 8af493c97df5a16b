import { describe, expect, it } from 'vitest';
import {
  controlCharacterAt,
  escapeControlCharacters,
  escapeJsonControls,
  inputExcerpt,
} from '../../src/domain/text.ts';
import { memoProblemOf } from '../../src/ingest/row-validator.ts';

describe('control characters', () => {
  it('finds C0, DEL and C1 characters, and nothing else', () => {
    for (const c of [
      '\u0000',
      '\u0007',
      '\t',
      '\n',
      '\r',
      '\u001b',
      '\u007f',
      '\u0080',
      '\u009b',
      '\u009f',
    ]) {
      expect(controlCharacterAt(`ab${c}`), JSON.stringify(c)).toBe(2);
    }
    expect(controlCharacterAt('plain text, accents é, emoji 💸, NBSP\u00a0, bidi \u202e')).toBe(-1);
  });

  it('escapes them visibly, keeping line feeds only when asked', () => {
    expect(escapeControlCharacters('\u001b]0;x\u0007 a\tb\r\nc \u009b2J \u007f')).toBe(
      '\\x1b]0;x\\x07 a\\tb\\r\\nc \\x9b2J \\x7f',
    );
    expect(escapeControlCharacters('one\ntwo\u001b', { keepNewlines: true })).toBe('one\ntwo\\x1b');
    expect(inputExcerpt('\u001b[31m' + 'x'.repeat(100), 8)).toBe('\\x1b[31mxxx');
  });

  it('escapes DEL and C1 in JSON text without changing its value', () => {
    const value = { memo: 'a\u009bb\u007fc\u001bd' };
    const text = escapeJsonControls(JSON.stringify(value));
    expect(text).toBe('{"memo":"a\\u009bb\\u007fc\\u001bd"}');
    expect(JSON.parse(text)).toEqual(value);
  });
});

describe('memoProblemOf', () => {
  it('refuses control characters (naming the first and where it is) and memos over 140 characters', () => {
    expect(memoProblemOf('Invoice 2024-06 — café ☕')).toBeUndefined();
    expect(memoProblemOf('💸💸\u001b[31m')).toBe(
      'memo contains a control character (U+001B at character 3); a memo is plain text on one line',
    );
    expect(memoProblemOf('a\nb')).toMatch(/U\+000A at character 2/);
    expect(memoProblemOf('x'.repeat(141))).toBe('memo is 141 characters; at most 140 are allowed');
  });
});
