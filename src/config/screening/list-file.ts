import { open, stat } from 'node:fs/promises';
import { isoDay } from '../../domain/list-date.ts';
import type { ListFormat, ParsedList } from './list-addresses.ts';
import { parseOfacAdvanced } from './ofac-advanced.ts';
import { parseOfacClassic } from './ofac-classic.ts';
import { parsePlainList } from './plain-list.ts';

/** A list file as read: what it says, and what it was on disk when read (to see a change). */
export type LoadedList = ParsedList & {
  /** The file as SCREENING_LISTS names it: the list's name everywhere. */
  readonly name: string;
  /** Its date of issue (the file's modification time where a plain list states none). */
  readonly issuedAt: number;
  /** `YYYY-MM-DD` of `issuedAt`. */
  readonly date: string;
  /** The file's modification time and size when it was read. */
  readonly stamp: string;
};

/** The file's modification time and size, as one text: a change of either is a new file to read. */
export async function fileStamp(path: string): Promise<string> {
  const s = await stat(path);
  return `${s.mtimeMs}:${s.size}`;
}

/** What the file's first element says it is: OFAC's advanced (`Sanctions`) or classic (`sdnList`) file, or plain text. */
async function formatOf(path: string): Promise<ListFormat> {
  const handle = await open(path, 'r');
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(64 * 1024), 0, 64 * 1024, 0);
    const head = buffer
      .subarray(0, bytesRead)
      .toString('utf8')
      .replace(/^\uFEFF/, '');
    if (!head.trimStart().startsWith('<')) return 'plain';
    // The first element past the declaration, comments and doctype.
    const root = /<([A-Za-z_][\w.:-]*)/.exec(head.replace(/<[?!][^>]*>/g, ''))?.[1];
    const local = root?.slice(root.indexOf(':') + 1);
    if (local === 'Sanctions') return 'ofac-advanced';
    if (local === 'sdnList') return 'ofac-classic';
    throw new Error(
      `an XML file whose root is <${(root ?? '?').slice(0, 40)}>: expected OFAC's sdn_advanced.xml (<Sanctions>) or sdn.xml (<sdnList>)`,
    );
  } finally {
    await handle.close();
  }
}

const PARSERS: Record<ListFormat, (path: string) => Promise<ParsedList>> = {
  'ofac-advanced': parseOfacAdvanced,
  'ofac-classic': parseOfacClassic,
  plain: parsePlainList,
};

/** Reads one list file; throws an Error whose message says what is wrong (not naming the file). */
export async function readListFile(path: string): Promise<LoadedList> {
  const before = await fileStamp(path);
  const parsed = await PARSERS[await formatOf(path)](path);
  const issuedAt = parsed.issuedAt ?? (await stat(path)).mtimeMs;
  return { ...parsed, name: path, issuedAt, date: isoDay(issuedAt), stamp: before };
}
