/*
 * Control characters (Unicode category Cc: C0 U+0000–U+001F, DEL U+007F, C1 U+0080–U+009F) in text
 * that came from outside — a memo, a CSV field quoted in an error, a message from the service. A
 * terminal acts on them (ESC starts colour codes and `ESC]0;…BEL` retitles the window; C1 CSI does
 * the same on some terminals), so memos may not hold them and the CLI shows them escaped.
 */

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const CONTROLS = /[\u0000-\u001f\u007f-\u009f]/g;
const CONTROLS_BUT_NEWLINE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g;
// What JSON.stringify leaves raw: it escapes C0 itself, but not DEL and C1.
const JSON_RAW_CONTROLS = /[\u007f-\u009f]/g;

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

const hex = (c: string) => (c.codePointAt(0) as number).toString(16).padStart(2, '0');

/** The index of the first control character of `text`, or -1. */
export function controlCharacterAt(text: string): number {
  return text.search(CONTROL);
}

/** `U+001B`: how a control character is named in a message. */
export function codePointName(c: string): string {
  return `U+${hex(c).toUpperCase().padStart(4, '0')}`;
}

/**
 * `text` with every control character written as a visible escape (`\n`, `\t`, `\r`, `\x1b`, `\x9b`),
 * so printing it cannot drive a terminal. `keepNewlines` leaves line feeds of multi-line messages.
 */
export function escapeControlCharacters(text: string, options: { keepNewlines?: boolean } = {}): string {
  const pattern = options.keepNewlines ? CONTROLS_BUT_NEWLINE : CONTROLS;
  return text.replace(pattern, (c) => NAMED[c] ?? `\\x${hex(c)}`);
}

/** A JSON text with DEL and C1 characters escaped as `\u00XX` too: the same value, safe to print. */
export function escapeJsonControls(json: string): string {
  return json.replace(JSON_RAW_CONTROLS, (c) => `\\u00${hex(c)}`);
}

/** At most `max` characters of an input value, its control characters escaped: for messages quoting input. */
export function inputExcerpt(text: string, max: number): string {
  return escapeControlCharacters(text.slice(0, max));
}
