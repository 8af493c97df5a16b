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

/** Reads a plain list; throws naming the line of a malformed entry or date. */
export async function parsePlainList(path: string): Promise<ParsedList> {
  const addresses = createAddressCollector();
  let issuedAt: number | undefined;
  let line = 0;
  for await (const raw of linesOf(path)) {
    line++;
    const text = raw.trim();
    const date = text.startsWith('#') ? DATE_LINE.exec(text) : null;
    if (date) {
      const m = ISO_DATE.exec(date[1] as string);
      issuedAt = m ? dayOf(Number(m[1]), Number(m[2]), Number(m[3])) : undefined;
      if (issuedAt === undefined) throw new Error(`line ${line}: the date must be YYYY-MM-DD`);
      continue;
    }
    const hash = text.indexOf('#');
    const entry = hash === -1 ? text : text.slice(0, hash).trim();
    if (entry === '') continue;
    if (/\s/.test(entry)) throw new Error(`line ${line}: one address per line ("${entry.slice(0, 60)}")`);
    addresses.add(entry);
  }
  return addresses.finish('plain', issuedAt);
}

/** The file's lines, read in large chunks (readline costs more than the lines' parsing). */
async function* linesOf(path: string): AsyncGenerator<string> {
  let rest = '';
  for await (const chunk of createReadStream(path, { encoding: 'utf8', highWaterMark: 1 << 20 })) {
    const text = rest + (chunk as string);
    let start = 0;
    for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
      yield text.slice(start, end);
      start = end + 1;
    }
    rest = text.slice(start);
  }
  if (rest !== '') yield rest;
}
