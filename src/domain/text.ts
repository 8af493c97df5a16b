/*
 * Control characters (Unicode category Cc: C0 U+0000–U+001F, DEL U+007F, C1 U+0080–U+009F) in text
 * that came from outside — a memo, a CSV field quoted in an error, a message from the service. A
 * terminal acts on them (ESC starts colour codes and `ESC]0;…BEL` retitles the window; C1 CSI does
 * the same on some terminals), so memos may not hold them and the CLI shows them escaped.
 *
 * Invisible characters are refused and escaped alike: the bidirectional embeddings, overrides and
 * isolates (U+202A–U+202E, U+2066–U+2069) make an invoice name read backwards on a terminal or a
 * page, and the zero-width characters and marks (U+200B–U+200F, U+2060, U+FEFF) make two different
 * texts look the same.
 */

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]/;
const UNSAFE_ALL = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]/g;
const UNSAFE_BUT_NEWLINE =
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]/g;
// What JSON.stringify leaves raw: it escapes C0 itself, but not DEL, C1 and the invisible characters.
const JSON_RAW_UNSAFE = /[\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]/g;

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

const hex = (c: string) => (c.codePointAt(0) as number).toString(16).padStart(2, '0');

/** The index of the first control character (C0, DEL, C1) of `text`, or -1. */
export function controlCharacterAt(text: string): number {
  return text.search(CONTROL);
}

/** The index of the first control or invisible character (bidi control, zero-width) of `text`, or -1. */
export function unsafeCharacterAt(text: string): number {
  return text.search(UNSAFE);
}

/** What kind of character `unsafeCharacterAt` found: for messages. */
export function unsafeCharacterKind(c: string): string {
  if (CONTROL.test(c)) return 'a control character';
  const code = c.codePointAt(0) as number;
  if ((code >= 0x202a && code <= 0x202e) || (code >= 0x2066 && code <= 0x2069))
    return 'a bidirectional text control';
  return 'an invisible (zero-width) character';
}

/** `U+001B`: how a control character is named in a message. */
export function codePointName(c: string): string {
  return `U+${hex(c).toUpperCase().padStart(4, '0')}`;
}

/**
 * `text` with every control and invisible character written as a visible escape (`\n`, `\t`, `\r`,
 * `\x1b`, `\x9b`, `\u202e`), so printing it cannot drive a terminal or turn text around.
 * `keepNewlines` leaves line feeds of multi-line messages.
 */
export function escapeControlCharacters(text: string, options: { keepNewlines?: boolean } = {}): string {
  const pattern = options.keepNewlines ? UNSAFE_BUT_NEWLINE : UNSAFE_ALL;
  return text.replace(pattern, (c) => NAMED[c] ?? (c.charCodeAt(0) > 0xff ? `\\u${hex(c)}` : `\\x${hex(c)}`));
}

/**
 * A JSON text with DEL, C1 and the invisible characters escaped as `\uXXXX` too: the same value,
 * safe to print.
 */
export function escapeJsonControls(json: string): string {
  return json.replace(JSON_RAW_UNSAFE, (c) => `\\u${hex(c).padStart(4, '0')}`);
}

/**
 * Why a short text from outside (a memo, a recipient's label) is not plain text, naming the first
 * control or invisible character and where it is (1-based, in characters), or undefined.
 */
export function plainTextProblem(field: string, text: string, rule: string): string | undefined {
  const at = unsafeCharacterAt(text);
  if (at === -1) return undefined;
  const c = text.charAt(at);
  const position = [...text.slice(0, at)].length + 1;
  return `${field} contains ${unsafeCharacterKind(c)} (${codePointName(c)} at character ${position}); ${rule}`;
}

/** At most `max` characters of an input value, its control characters escaped: for messages quoting input. */
export function inputExcerpt(text: string, max: number): string {
  return escapeControlCharacters(text.slice(0, max));
}
