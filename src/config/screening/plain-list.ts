import { createReadStream } from 'node:fs';
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
 * Reads a plain list in large chunks, each chunk's lines in one synchronous pass (readline, or an
 * async step per line, cost more than the lines' parsing); throws naming the line of a malformed
 * entry or date.
 */
export async function parsePlainList(path: string): Promise<ParsedList> {
  const state: PlainState = { addresses: createAddressCollector(), issuedAt: undefined, line: 0 };
  let rest = '';
  for await (const chunk of createReadStream(path, { encoding: 'utf8', highWaterMark: 1 << 20 })) {
    const text = rest + (chunk as string);
    let start = 0;
    for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
      readLine(state, text.slice(start, end));
      start = end + 1;
    }
    rest = text.slice(start);
  }
  if (rest !== '') readLine(state, rest);
  return state.addresses.finish('plain', state.issuedAt);
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
