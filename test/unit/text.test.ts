import { describe, expect, it } from 'vitest';
import {
  controlCharacterAt,
  escapeControlCharacters,
  escapeJsonControls,
  inputExcerpt,
  unsafeCharacterAt,
} from '../../src/domain/text.ts';
import { labelProblem } from '../../src/domain/recipient-key.ts';
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

describe('invisible characters (issue 23)', () => {
  const invisible = ['\u202a', '\u202e', '\u2066', '\u2069', '\u200b', '\u200f', '\u2060', '\ufeff'];

  it('refuses bidi controls, zero-width characters and C1 in memos and labels, naming the first', () => {
    for (const c of invisible) {
      expect(unsafeCharacterAt(`ab${c}`), JSON.stringify(c)).toBe(2);
      expect(memoProblemOf(`Invoice ${c}fdp.exe`), JSON.stringify(c)).toMatch(
        /^memo contains an? (bidirectional text control|invisible \(zero-width\) character) \(U\+[0-9A-F]{4} at character 9\); a memo is plain text on one line$/,
      );
      expect(labelProblem(`Acme${c}`), JSON.stringify(c)).toMatch(/^label contains .* at character 5\)/);
    }
    expect(memoProblemOf('a\u202eb')).toBe(
      'memo contains a bidirectional text control (U+202E at character 2); a memo is plain text on one line',
    );
    expect(labelProblem('Acme\u0085payroll')).toBe(
      'label contains a control character (U+0085 at character 5); a label is plain text on one line',
    );
    expect(labelProblem('Café ☕ payroll, NBSP\u00a0ok')).toBeUndefined();
    expect(unsafeCharacterAt('plain text, accents é, emoji 💸, NBSP\u00a0')).toBe(-1);
  });

  it('shows them escaped on a terminal and in JSON, without changing a JSON value', () => {
    expect(escapeControlCharacters('a\u202eb\u200bc\u0085d')).toBe('a\\u202eb\\u200bc\\x85d');
    const value = { label: 'a\u202eb\u2066c\ufeffd\u0085' };
    const text = escapeJsonControls(JSON.stringify(value));
    expect(text).toBe('{"label":"a\\u202eb\\u2066c\\ufeffd\\u0085"}');
    expect(JSON.parse(text)).toEqual(value);
  });
});
