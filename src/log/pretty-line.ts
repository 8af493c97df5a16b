import { escapeControlCharacters } from '../domain/text.ts';

/*
 * `LOG_FORMAT=pretty` (the default when stderr is a terminal): each pino record as one line a person
 * reads — `12:34:56.789 WARN  message key=value …` — made from the JSON line pino has already
 * redacted, so it shows nothing the JSON would not.
 */

const LEVELS: Readonly<Record<number, string>> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};

/** Fields every record has, shown in the line's head or not at all. */
const HEAD_FIELDS = new Set(['level', 'time', 'msg', 'pid', 'hostname']);

/** `HH:MM:SS.mmm` of the record's time (UTC, as the JSON's ISO times are). */
function clock(time: unknown): string {
  return typeof time === 'number' ? new Date(time).toISOString().slice(11, 23) : '--:--:--.---';
}

/** A value after `key=`: text bare unless it has a space or a quote, anything else as compact JSON. */
function valueText(value: unknown): string {
  if (typeof value === 'string') return /[\s"=]/.test(value) || value === '' ? JSON.stringify(value) : value;
  if (value !== null && typeof value === 'object' && 'message' in value && 'type' in value) {
    // An error (pino's serializer): its type and message, not its stack (one line per record).
    const e = value as { type?: unknown; message?: unknown };
    return JSON.stringify(`${String(e.type)}: ${String(e.message)}`);
  }
  return JSON.stringify(value) ?? String(value);
}

/** One pino JSON line (with or without its newline) as one readable line, newline included. */
export function prettyLine(jsonLine: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(jsonLine) as Record<string, unknown>;
  } catch {
    return jsonLine.endsWith('\n') ? jsonLine : `${jsonLine}\n`;
  }
  const level = LEVELS[record['level'] as number] ?? String(record['level']);
  const fields = Object.entries(record)
    .filter(([key, value]) => !HEAD_FIELDS.has(key) && value !== undefined)
    .map(([key, value]) => `${key}=${valueText(value)}`);
  const msg = typeof record['msg'] === 'string' ? record['msg'] : '';
  const text = [`${clock(record['time'])} ${level.padEnd(5)}`, msg, ...fields]
    .filter((p) => p !== '')
    .join(' ');
  // Newlines and other control characters inside values stay escaped: one record, one line.
  return `${escapeControlCharacters(text)}\n`;
}
