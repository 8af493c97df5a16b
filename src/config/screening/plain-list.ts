import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { dayOf } from '../../domain/list-date.ts';
import { createAddressCollector, type ParsedList } from './list-addresses.ts';

/*
 * A plain list: one address per line, `#` starting a comment, blank lines ignored, and an optional
 * `# date: YYYY-MM-DD` line giving its date of issue (without it the file's modification time is
 * its date: list-file.ts).
 */

const DATE_LINE = /^#\s*date:\s*(\S*)\s*$/i;
const ISO_DATE = /^([0-9]{4})-([0-9]{2})-([0-9]{2})$/;

/** What reading has found so far. */
type PlainState = {
  readonly addresses: ReturnType<typeof createAddressCollector>;
  issuedAt: number | undefined;
  line: number;
};

/**
 * Reads a plain list in large chunks of bytes, each chunk's lines in one synchronous pass (readline,
 * or an async step per line, cost more than the lines' parsing); a line that is an EVM address and
 * nothing else is read from its bytes, any other line as text. Throws naming the line of a malformed
 * entry or date.
 */
export async function parsePlainList(path: string): Promise<ParsedList> {
  // At most one EVM address per 43 bytes (42 and its newline): the table is sized for that at once.
  const expected = Math.floor((await stat(path)).size / 43);
  const state: PlainState = { addresses: createAddressCollector(expected), issuedAt: undefined, line: 0 };
  let rest: Buffer | undefined;
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
    const bytes = rest ? Buffer.concat([rest, chunk as Buffer]) : (chunk as Buffer);
    let start = 0;
    for (let end = bytes.indexOf(NL); end !== -1; end = bytes.indexOf(NL, start)) {
      readLineBytes(state, bytes, start, end);
      start = end + 1;
    }
    rest = start < bytes.length ? bytes.subarray(start) : undefined;
  }
  if (rest) readLineBytes(state, rest, 0, rest.length);
  return state.addresses.finish('plain', state.issuedAt);
}

const NL = 0x0a;
const CR = 0x0d;

/** The line `bytes[start, end)` (its `\n` apart): an address taken from its bytes, or readLine's text. */
function readLineBytes(state: PlainState, bytes: Buffer, start: number, end: number): void {
  const last = end > start && bytes[end - 1] === CR ? end - 1 : end;
  if (state.addresses.addEvmText(bytes, start, last)) {
    state.line++;
    return;
  }
  readLine(state, bytes.toString('utf8', start, end));
}

/** One line: a date line, a comment, blank, or one address (and maybe a comment after it). */
function readLine(state: PlainState, raw: string): void {
  state.line++;
  const text = raw.trim();
  if (text === '') return;
  if (text.charCodeAt(0) === 35 /* # */) {
    const date = DATE_LINE.exec(text);
    if (!date) return;
    const m = ISO_DATE.exec(date[1] as string);
    state.issuedAt = m ? dayOf(Number(m[1]), Number(m[2]), Number(m[3])) : undefined;
    if (state.issuedAt === undefined) throw new Error(`line ${state.line}: the date must be YYYY-MM-DD`);
    return;
  }
  const hash = text.indexOf('#');
  const entry = hash === -1 ? text : text.slice(0, hash).trim();
  if (/\s/.test(entry)) throw new Error(`line ${state.line}: one address per line ("${entry.slice(0, 60)}")`);
  state.addresses.add(entry);
}
